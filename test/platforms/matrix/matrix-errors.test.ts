import { ConnectionError, HTTPError, MatrixError } from 'matrix-js-sdk/lib/http-api/index.js';
import { describe, expect, it } from 'vitest';
import { matrixDeliveryError, retryAfterMsOf } from '../../../src/platforms/matrix/matrix-errors.js';

const URL_WITH_ROOM = 'http://127.0.0.1:1/_matrix/client/v3/rooms/%21secretRoom%3Aexample.org/send/m.room.message/d1';

describe('matrixDeliveryError', () => {
  it('retries M_LIMIT_EXCEEDED after retry_after_ms, and after the Retry-After header first when there is one', () => {
    const limited = matrixDeliveryError(new MatrixError({ errcode: 'M_LIMIT_EXCEEDED', error: 'Too many', retry_after_ms: 1_500 }, 429, URL_WITH_ROOM), 'a send');
    expect(limited).toMatchObject({ retryable: true, retryAfterMs: 1_500, message: 'Matrix failed a send: 429 M_LIMIT_EXCEEDED' });
    const headed = new MatrixError({ errcode: 'M_LIMIT_EXCEEDED', retry_after_ms: 10 }, 429, URL_WITH_ROOM, undefined, new Headers({ 'retry-after': '3' }));
    expect(matrixDeliveryError(headed, 'a send').retryAfterMs).toBe(3_000);
    expect(retryAfterMsOf(new MatrixError({ errcode: 'M_LIMIT_EXCEEDED', retry_after_ms: 'soon' }, 429))).toBeUndefined();
  });

  it('retries 5xx and no answer at all; a refusal is final', () => {
    expect(matrixDeliveryError(new HTTPError('Server returned 502 error', 502), 'a send')).toMatchObject({ retryable: true, retryAfterMs: undefined });
    expect(matrixDeliveryError(new ConnectionError('fetch failed', new Error('connect ECONNREFUSED 127.0.0.1:1')), 'a send')).toMatchObject({ retryable: true });
    expect(matrixDeliveryError(new MatrixError({ errcode: 'M_FORBIDDEN', error: 'not in room' }, 403, URL_WITH_ROOM), 'a send')).toMatchObject({
      retryable: false,
      message: 'Matrix refused a send: 403 M_FORBIDDEN',
    });
  });

  it('names neither the URL nor the homeserver\'s words, which hold the room id, and keeps no cause that would', () => {
    const error = matrixDeliveryError(new MatrixError({ errcode: 'M_FORBIDDEN', error: 'User not in room !secretRoom:example.org' }, 403, URL_WITH_ROOM), 'a send');
    expect(`${error.message} ${String(error.stack)}`).not.toMatch(/secretRoom/);
    expect(error.cause).toBeUndefined();
  });
});
