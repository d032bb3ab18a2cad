import { describe, expect, it } from 'vitest';
import { AcceptOnce } from '../../src/platforms/accept-once.js';

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('AcceptOnce', () => {
  it('takes a message once; a later delivery of it is a duplicate', async () => {
    const once = new AcceptOnce(10);
    expect(await once.accept('c/1', async () => 'taken')).toBe('taken');
    expect(await once.accept('c/1', async () => 'again')).toBeUndefined();
  });

  it('lets a redelivery that came while the first accept was failing take the message', async () => {
    const once = new AcceptOnce(10);
    const first = deferred<string>();
    const firstAnswer = once.accept('c/1', () => first.promise);
    const redelivery = once.accept('c/1', async () => 'taken by the redelivery');
    first.reject(new Error('store failed'));
    await expect(firstAnswer).rejects.toThrow('store failed');
    expect(await redelivery).toBe('taken by the redelivery');
  });

  it('answers a redelivery that came while the first accept was succeeding as a duplicate, once it has', async () => {
    const once = new AcceptOnce(10);
    const first = deferred<string>();
    const firstAnswer = once.accept('c/1', () => first.promise);
    let redeliveryAccepted = false;
    const redelivery = once.accept('c/1', async () => {
      redeliveryAccepted = true;
      return 'twice';
    });
    first.resolve('taken');
    expect(await firstAnswer).toBe('taken');
    expect(await redelivery).toBeUndefined();
    expect(redeliveryAccepted).toBe(false);
  });

  it('gives a message to one of several redeliveries waiting on a failed first accept', async () => {
    const once = new AcceptOnce(10);
    const first = deferred<string>();
    const taken: string[] = [];
    const firstAnswer = once.accept('c/1', () => first.promise).catch(() => 'failed');
    const waiting = ['a', 'b', 'c'].map((name) => once.accept('c/1', async () => (taken.push(name), name)));
    first.reject(new Error('store failed'));
    expect(await firstAnswer).toBe('failed');
    expect((await Promise.all(waiting)).filter((answer) => answer !== undefined)).toHaveLength(1);
    expect(taken).toHaveLength(1);
  });

  it('forgets a message whose accept threw at once, so its redelivery is taken', async () => {
    const once = new AcceptOnce(10);
    await expect(
      once.accept('c/1', () => {
        throw new Error('bad headers');
      }),
    ).rejects.toThrow('bad headers');
    expect(await once.accept('c/1', async () => 'taken')).toBe('taken');
  });
});
