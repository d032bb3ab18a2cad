import { expect } from 'vitest';
import { ThreadlineError, type ErrorCode } from '../../src/errors.js';

/** What `fn` threw; fails the test when it returns instead. */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return expect.fail('expected the call to throw');
}

/** What `promise` rejected with; fails the test when it resolves instead. */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  return expect.fail('expected the promise to reject');
}

/** Asserts that `error` is a ThreadlineError with one of `codes`, and returns it typed. */
export function assertThreadlineError(error: unknown, codes: ErrorCode | readonly ErrorCode[]): ThreadlineError {
  expect(error).toBeInstanceOf(ThreadlineError);
  const allowed: readonly ErrorCode[] = typeof codes === 'string' ? [codes] : codes;
  expect(allowed).toContain((error as ThreadlineError).code);
  return error as ThreadlineError;
}

/** Asserts that `fn` throws a ThreadlineError with one of `codes`. */
export function expectThreadlineError(fn: () => unknown, codes: ErrorCode | readonly ErrorCode[]): ThreadlineError {
  return assertThreadlineError(thrownBy(fn), codes);
}

/**
 * For fuzzing: `fn` may return, but if it throws, it must be a ThreadlineError with one of
 * `codes`. Returns whether it threw.
 */
export function throwsOnlyThreadlineError(fn: () => unknown, codes: readonly ErrorCode[]): boolean {
  try {
    fn();
    return false;
  } catch (error) {
    assertThreadlineError(error, codes);
    return true;
  }
}
