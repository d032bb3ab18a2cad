import { afterEach, describe, expect, it, vi } from 'vitest';
import { LazyAbortController } from '../../src/gateway/lazy-abort-controller.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('LazyAbortController', () => {
  it('makes no AbortController until its signal is asked for', () => {
    const made = vi.spyOn(globalThis, 'AbortController');
    const abort = new LazyAbortController();
    expect(abort.aborted).toBe(false);
    abort.abort(new Error('stop'));
    expect(abort.aborted).toBe(true);
    expect(made).not.toHaveBeenCalled();
  });

  it('hands out a signal already aborted, with the reason, when abort() came first', () => {
    const abort = new LazyAbortController();
    const reason = new Error('stopped by /stop');
    abort.abort(reason);
    abort.abort(new Error('later'));
    expect(abort.signal.aborted).toBe(true);
    expect(abort.signal.reason).toBe(reason);
  });

  it('aborts a signal already handed out, once', () => {
    const abort = new LazyAbortController();
    const heard = vi.fn();
    abort.signal.addEventListener('abort', heard);
    const reason = new Error('the gateway is stopping');
    abort.abort(reason);
    abort.abort(new Error('again'));
    expect(heard).toHaveBeenCalledTimes(1);
    expect(abort.aborted).toBe(true);
    expect(abort.signal.reason).toBe(reason);
  });
});
