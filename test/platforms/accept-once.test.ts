import { describe, expect, it } from 'vitest';
import { AcceptOnce } from '../../src/platforms/accept-once.js';

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('AcceptOnce', () => {
  it('runs a redelivery that came while the first accept was under way only after that accept ended', async () => {
    const once = new AcceptOnce();
    const first = deferred<string>();
    const firstAnswer = once.accept('c/1', () => first.promise);
    let redeliveryStarted = false;
    const redelivery = once.accept('c/1', async () => {
      redeliveryStarted = true;
      return 'asked again';
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(redeliveryStarted).toBe(false);
    first.resolve('taken');
    expect(await firstAnswer).toBe('taken');
    // Intake answers it: from the store's idempotency key, as a duplicate.
    expect(await redelivery).toBe('asked again');
  });

  it('lets a redelivery that came while the first accept was failing ask again', async () => {
    const once = new AcceptOnce();
    const first = deferred<string>();
    const firstAnswer = once.accept('c/1', () => first.promise);
    const redelivery = once.accept('c/1', async () => 'taken by the redelivery');
    first.reject(new Error('store failed'));
    await expect(firstAnswer).rejects.toThrow('store failed');
    expect(await redelivery).toBe('taken by the redelivery');
  });

  it('runs waiting redeliveries one at a time, and other keys at once', async () => {
    const once = new AcceptOnce();
    let running = 0;
    let most = 0;
    const slow = async (name: string) => {
      most = Math.max(most, ++running);
      await new Promise((resolve) => setTimeout(resolve, 5));
      running--;
      return name;
    };
    const other = deferred<string>();
    const otherKey = once.accept('c/2', () => other.promise);
    expect(await Promise.all(['a', 'b', 'c'].map((name) => once.accept('c/1', () => slow(name))))).toEqual(['a', 'b', 'c']);
    expect(most).toBe(1);
    other.resolve('not held back');
    expect(await otherKey).toBe('not held back');
  });

  it('keeps nothing once an accept has ended, also one that threw at once', async () => {
    const once = new AcceptOnce();
    await expect(
      once.accept('c/1', () => {
        throw new Error('bad headers');
      }),
    ).rejects.toThrow('bad headers');
    expect(await once.accept('c/1', async () => 'taken')).toBe('taken');
    expect((once as unknown as { pending: Map<string, unknown> }).pending.size).toBe(0);
  });
});
