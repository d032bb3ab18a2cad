import { describe, expect, it } from 'vitest';
import { ConfigError, ERROR_CODES, SessionFieldError, ThreadlineError, type ErrorCode } from '../src/errors.js';

const codes = Object.keys(ERROR_CODES) as ErrorCode[];

describe('ERROR_CODES', () => {
  it('holds codes', () => {
    expect(codes.length).toBeGreaterThan(0);
  });

  it.each(codes)('%s has an HTTP error status and a summary', (code) => {
    const { status, summary } = ERROR_CODES[code];
    expect(Number.isInteger(status)).toBe(true);
    expect(status).toBeGreaterThanOrEqual(400);
    expect(status).toBeLessThan(600);
    expect(summary.trim().length).toBeGreaterThan(10);
  });

  it.each(codes)('ThreadlineError(%s) carries the code and its status', (code) => {
    const cause = new Error('underneath');
    const error = new ThreadlineError(code, 'what to do', { cause });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('ThreadlineError');
    expect(error.code).toBe(code);
    expect(error.statusCode).toBe(ERROR_CODES[code].status);
    expect(error.message).toBe('what to do');
    expect(error.cause).toBe(cause);
  });
});

describe('typed errors', () => {
  it('SessionFieldError names the field and is TL_SESSION_INVALID', () => {
    const error = new SessionFieldError('threadId', 'must be a string');
    expect(error).toBeInstanceOf(ThreadlineError);
    expect(error.name).toBe('SessionFieldError');
    expect(error.code).toBe('TL_SESSION_INVALID');
    expect(error.statusCode).toBe(ERROR_CODES.TL_SESSION_INVALID.status);
    expect(error.field).toBe('threadId');
    expect(error.message).toContain('"threadId"');
    expect(error.message).toContain('must be a string');
  });

  it('ConfigError names the variable and is TL_CONFIG_INVALID', () => {
    const error = new ConfigError('THREADLINE_SPAN_PRIVACY', '"x" is not one of plain, hmac, off');
    expect(error).toBeInstanceOf(ThreadlineError);
    expect(error.name).toBe('ConfigError');
    expect(error.code).toBe('TL_CONFIG_INVALID');
    expect(error.variable).toBe('THREADLINE_SPAN_PRIVACY');
    expect(error.message).toContain('THREADLINE_SPAN_PRIVACY');
  });
});
