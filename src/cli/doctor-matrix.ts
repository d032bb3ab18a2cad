import { ThreadlineError } from '../errors.js';
import { readMatrixConfig, type MatrixConfig } from '../gateway/gateway-config.js';
import { safeUrl } from '../text/redact-secrets.js';

/** How long the homeserver gets to answer each question. */
const ANSWER_TIMEOUT_MS = 5_000;

/** One line of `threadline doctor`, as doctor.ts prints it. */
interface MatrixCheck {
  readonly ok: boolean;
  readonly warning?: true;
  readonly line: string;
}

/**
 * With Matrix configured: the homeserver says whose the access token is (whoami), and in how
 * many rooms that account is, since it answers only where it has joined. Nothing when unset.
 */
export async function checkMatrixCredentials(env: NodeJS.ProcessEnv): Promise<MatrixCheck[]> {
  let config: MatrixConfig | undefined;
  try {
    config = readMatrixConfig(env);
  } catch (error) {
    if (!(error instanceof ThreadlineError)) throw error;
    return [{ ok: false, line: 'matrix not checked: the Matrix settings are invalid' }];
  }
  if (config === undefined) return [];
  const where = `matrix ${safeUrl(config.homeserverUrl)}`;
  // Loaded here: only a gateway with Matrix needs the SDK.
  const [{ MatrixClient }, { matrixDeliveryError }] = await Promise.all([import('../platforms/matrix/matrix-client.js'), import('../platforms/matrix/matrix-errors.js')]);
  const client = new MatrixClient(config);
  let user: string;
  try {
    user = (await client.whoami(AbortSignal.timeout(ANSWER_TIMEOUT_MS))).userId;
  } catch (error) {
    return [{ ok: false, line: `${where}: the access token does not answer: ${matrixDeliveryError(error, 'whoami').message}` }];
  }
  const signedIn: MatrixCheck = { ok: true, line: `${where}: the access token is ${user}'s` };
  try {
    const rooms = (await client.joinedRooms(AbortSignal.timeout(ANSWER_TIMEOUT_MS))).length;
    if (rooms > 0) return [signedIn, { ok: true, line: `matrix: ${user} is in ${rooms} ${rooms === 1 ? 'room' : 'rooms'}` }];
    return [signedIn, { ok: true, warning: true, line: `matrix: ${user} is in no room: invite it, and join as it (docs/platforms.md), so it answers there` }];
  } catch (error) {
    return [signedIn, { ok: false, line: `matrix: the rooms of ${user} cannot be read: ${matrixDeliveryError(error, 'joined_rooms').message}` }];
  }
}
