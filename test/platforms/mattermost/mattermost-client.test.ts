import { afterEach, describe, expect, it } from 'vitest';
import { MattermostApiError, MattermostClient } from '../../../src/platforms/mattermost/mattermost-client.js';
import { startLocalServer, type LocalResponse, type LocalServer } from '../../../src/testing/local-server.js';

const TOKEN = 'mattermost-client-test-token-s3cr3t';
const servers: LocalServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/** A client of a server that answers every call with `answer`, and the requests it saw. */
async function clientOf(answer: () => LocalResponse | Promise<LocalResponse>, timeoutMs = 2_000) {
  const seen: { path: string; authorization: string | undefined }[] = [];
  const server = await startLocalServer((request) => {
    seen.push({ path: request.path, authorization: request.headers['authorization'] });
    return answer();
  });
  servers.push(server);
  return { client: new MattermostClient({ url: server.origin, token: TOKEN, timeoutMs }), seen };
}

async function failureOf(call: Promise<unknown>): Promise<MattermostApiError> {
  const error = await call.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(MattermostApiError);
  return error as MattermostApiError;
}

describe('MattermostClient', () => {
  it('sends the token as a bearer and reads the answer', async () => {
    const { client, seen } = await clientOf(() => ({ status: 200, body: { id: 'abc', username: 'threadline' } }));
    expect(await client.getMe()).toMatchObject({ username: 'threadline' });
    expect(seen).toEqual([{ path: '/api/v4/users/me', authorization: `BEARER ${TOKEN}` }]);
  });

  it("turns the rate limiter's 429 (plain text) into a retryable failure with Retry-After's wait", async () => {
    const { client } = await clientOf(() => ({ status: 429, headers: { 'retry-after': '3', 'x-ratelimit-reset': '9' }, body: 'limit exceeded\n' }));
    const error = await failureOf(client.createPost({ channel_id: 'c'.repeat(26), message: 'hi' }));
    expect(error).toMatchObject({ status: 429, retryable: true, retryAfterMs: 3_000 });
    expect(error.message).toBe('Mattermost POST /api/v4/posts answered 429: limit exceeded');
  });

  it('takes the wait from X-RateLimit-Reset when a 429 has no Retry-After', async () => {
    const { client } = await clientOf(() => ({ status: 429, headers: { 'x-ratelimit-reset': '2' }, body: 'limit exceeded\n' }));
    expect(await failureOf(client.getMe())).toMatchObject({ status: 429, retryAfterMs: 2_000 });
  });

  it("names the server's error id; a refusal is final, the server's trouble is retried", async () => {
    let status = 400;
    const { client } = await clientOf(() => ({ status, body: { id: 'api.post.create_post.root_id.app_error', message: 'Invalid RootId parameter.', status_code: status } }));
    const refused = await failureOf(client.patchPost({ id: 'p'.repeat(26), message: 'x' }));
    expect(refused).toMatchObject({ status: 400, retryable: false, serverErrorId: 'api.post.create_post.root_id.app_error' });
    // The post's id is a route parameter, not written out: ids name chats and people.
    expect(refused.message).toBe('Mattermost PUT /api/v4/posts/:id/patch answered 400: api.post.create_post.root_id.app_error: Invalid RootId parameter.');
    status = 503;
    expect(await failureOf(client.getMe())).toMatchObject({ status: 503, retryable: true });
  });

  it('gives up on a server that does not answer in time, as a retryable failure without the token in it', async () => {
    const { client } = await clientOf(() => new Promise<LocalResponse>((resolve) => setTimeout(() => resolve({ status: 200, body: {} }), 1_000)), 100);
    const error = await failureOf(client.getMe());
    expect(error).toMatchObject({ status: 0, retryable: true });
    expect(error.message).toBe('Mattermost GET /api/v4/users/me could not be reached: no answer within 100 ms');
    expect(JSON.stringify({ ...error, message: error.message, stack: error.stack })).not.toContain(TOKEN);
  });
});
