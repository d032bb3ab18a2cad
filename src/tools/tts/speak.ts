import { spawn, type ChildProcess } from 'node:child_process';
import { ThreadlineError, messageOf } from '../../errors.js';

/** What one synthesis may use. */
export interface SpeakOptions {
  /** An espeak-ng voice (`espeak-ng --voices`). */
  readonly voice: string;
  /** The Ogg/Opus file may not grow past this many bytes. */
  readonly maxBytes: number;
  readonly timeoutMs: number;
  /** /stop or shutdown: both programs are killed. */
  readonly signal: AbortSignal;
  /** The PATH the programs are looked up in. */
  readonly searchPath: string | undefined;
}

/** The Debian packages that provide each program, for the error a missing one gives. */
const INSTALL_HINT = 'install them with `apt-get install espeak-ng opus-tools`';
/** Speech needs little: 32 kbit/s keeps about four minutes of it under 1 MiB. */
const OPUS_ARGS = ['--quiet', '--speech', '--bitrate', '32', '-', '-'];
/** Enough of a program's stderr to say what went wrong. */
const STDERR_KEEP = 2_000;
/** Voice names are plain words and paths (`en`, `en-us`, `gmw/en-GB-x-rp`, `mb-en1`, `en+f3`): never an option. */
const VOICE_NAME = /^[A-Za-z0-9][A-Za-z0-9_+./-]{0,63}$/;

/**
 * Speaks `text` with `espeak-ng -v <voice> --stdout` (WAV) piped into `opusenc` (Ogg/Opus)
 * and resolves with the file. No shell: the text goes in on espeak-ng's stdin, so nothing in
 * it is ever read as an option or a command. Throws TL_TOOL_UNAVAILABLE when a program or the
 * voice is missing, TL_TOOL_INPUT when the file would pass `maxBytes`, TL_TOOL_FAILED when a
 * program fails, times out or the call is stopped.
 */
export async function speak(text: string, options: SpeakOptions): Promise<Buffer> {
  if (!VOICE_NAME.test(options.voice)) {
    throw new ThreadlineError('TL_TOOL_UNAVAILABLE', `THREADLINE_TTS_VOICE "${options.voice.slice(0, 64)}" is not an espeak-ng voice name; \`espeak-ng --voices\` lists them`);
  }
  if (options.signal.aborted) throw stopped(options.signal);
  // The programs get no secrets: only what finding them and their data needs.
  const env = childEnv(options.searchPath);
  const espeak = spawn('espeak-ng', ['-v', options.voice, '--stdout', '--stdin'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  const opusenc = spawn('opusenc', OPUS_ARGS, { env, stdio: ['pipe', 'pipe', 'pipe'] });
  return new Pipeline(espeak, opusenc, options).run(text);
}

/** The two processes of one synthesis, and the first reason it ended. */
class Pipeline {
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  private failure: ThreadlineError | undefined;
  private readonly espeakErr = new BoundedText();
  private readonly opusErr = new BoundedText();

  constructor(
    private readonly espeak: ChildProcess,
    private readonly opusenc: ChildProcess,
    private readonly options: SpeakOptions,
  ) {}

  async run(text: string): Promise<Buffer> {
    const { espeak, opusenc, options } = this;
    const stop = () => this.fail(stopped(options.signal));
    options.signal.addEventListener('abort', stop, { once: true });
    const timer = setTimeout(
      () => this.fail(new ThreadlineError('TL_TOOL_FAILED', `espeak-ng and opusenc took longer than ${Math.round(options.timeoutMs / 1000)} s; try a shorter text`)),
      options.timeoutMs,
    );
    try {
      // A program that is gone closes its pipes: the write or read errors are expected then.
      for (const stream of [espeak.stdin, espeak.stdout, espeak.stderr, opusenc.stdin, opusenc.stdout, opusenc.stderr]) stream?.on('error', () => {});
      espeak.stderr?.on('data', (chunk: Buffer) => this.espeakErr.add(chunk));
      opusenc.stderr?.on('data', (chunk: Buffer) => this.opusErr.add(chunk));
      espeak.stdout!.pipe(opusenc.stdin!);
      // An encoder that quits early would leave espeak-ng blocked on a pipe nobody reads:
      // its output is drained instead, so it ends on its own and its exit code stays true.
      opusenc.once('exit', () => {
        espeak.stdout!.unpipe();
        espeak.stdout!.resume();
      });
      opusenc.stdout!.on('data', (chunk: Buffer) => this.collect(chunk));
      espeak.stdin!.end(text);
      const [espeakExit, opusExit] = await Promise.all([exitOf(espeak, 'espeak-ng'), exitOf(opusenc, 'opusenc')]);
      if (this.failure !== undefined) throw this.failure;
      // espeak-ng's failure first: opusenc then only says its input was empty.
      if (espeakExit !== 0) throw this.espeakFailure(espeakExit);
      if (opusExit !== 0) throw new ThreadlineError('TL_TOOL_FAILED', `opusenc failed (${describeExit(opusExit)}): ${this.opusErr.text() || 'no message'}`);
      return Buffer.concat(this.chunks);
    } catch (error) {
      this.killBoth();
      throw this.failure ?? error;
    } finally {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', stop);
    }
  }

  private collect(chunk: Buffer): void {
    if (this.failure !== undefined) return;
    this.bytes += chunk.length;
    if (this.bytes > this.options.maxBytes) {
      this.fail(new ThreadlineError('TL_TOOL_INPUT', `That text is too long to speak in ${formatSize(this.options.maxBytes)}; send a shorter one`));
      return;
    }
    this.chunks.push(chunk);
  }

  /** Keeps the first reason, drops what was collected, and ends both programs. */
  private fail(error: ThreadlineError): void {
    if (this.failure !== undefined) return;
    this.failure = error;
    this.chunks.length = 0;
    this.killBoth();
  }

  private killBoth(): void {
    endProcess(this.espeak);
    endProcess(this.opusenc);
  }

  private espeakFailure(exit: number | NodeJS.Signals): ThreadlineError {
    const said = this.espeakErr.text();
    if (/voice does not exist/i.test(said)) {
      return new ThreadlineError('TL_TOOL_UNAVAILABLE', `espeak-ng has no voice "${this.options.voice}" (THREADLINE_TTS_VOICE); \`espeak-ng --voices\` lists them`);
    }
    return new ThreadlineError('TL_TOOL_FAILED', `espeak-ng failed (${describeExit(exit)}): ${said || 'no message'}`);
  }
}

function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/**
 * Kills `child` and closes its pipes: an unread pipe (espeak-ng's, once unpiped) would
 * otherwise never end, and the process would never report 'close'.
 */
function endProcess(child: ChildProcess): void {
  if (running(child)) child.kill('SIGKILL');
  for (const stream of [child.stdin, child.stdout, child.stderr]) stream?.destroy();
}

/** Resolves with the exit code (or the signal) once the process and its pipes closed; a program that cannot start is TL_TOOL_UNAVAILABLE. */
function exitOf(child: ChildProcess, program: string): Promise<number | NodeJS.Signals> {
  return new Promise((resolve, reject) => {
    // on, not once: a failed kill() emits 'error' too, and a second one unheard would crash.
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'EACCES') {
        reject(new ThreadlineError('TL_TOOL_UNAVAILABLE', `tts needs ${program}, which is not installed on this host (Debian: ${INSTALL_HINT})`, { cause: error }));
      } else {
        reject(new ThreadlineError('TL_TOOL_FAILED', `${program} could not be started: ${messageOf(error)}`, { cause: error }));
      }
    });
    child.once('close', (code, signal) => resolve(code ?? signal ?? 1));
  });
}

function stopped(signal: AbortSignal): ThreadlineError {
  return new ThreadlineError('TL_TOOL_FAILED', 'tts was stopped before the voice note was ready', { cause: signal.reason });
}

function childEnv(searchPath: string | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of ['HOME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TMPDIR', 'ESPEAK_DATA_PATH']) {
    if (process.env[name] !== undefined) env[name] = process.env[name];
  }
  if (searchPath !== undefined) env['PATH'] = searchPath;
  return env;
}

function describeExit(exit: number | NodeJS.Signals): string {
  return typeof exit === 'number' ? `exit code ${exit}` : `killed by ${exit}`;
}

function formatSize(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  return bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`;
}

/** The first STDERR_KEEP characters a program wrote, trimmed. */
class BoundedText {
  private value = '';
  add(chunk: Buffer): void {
    if (this.value.length < STDERR_KEEP) this.value += chunk.toString('utf8').slice(0, STDERR_KEEP - this.value.length);
  }
  text(): string {
    return this.value.trim();
  }
}
