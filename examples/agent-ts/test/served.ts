/**
 * Start the toolkit's served fakes as child processes on free ports and read their banners:
 * `fake-contextq serve` (ContextQ's REST API) and `fake-anthropic serve SCRIPT` (the
 * scripted Messages API). Both print their URL once their socket listens, so a request
 * made after the banner waits for the server instead of failing.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface Served {
  /** The banner's `NAME=value` lines. */
  env: Record<string, string>;
  /** SIGTERM, then what the process printed and its exit status. */
  stop(): Promise<{ code: number | null; stdout: string; stderr: string }>;
}

const INSTALL =
  "install the toolkit with its 'fake' extra (pip install 'contextq-memory-tool[fake]') so " +
  'fake-contextq and fake-anthropic are on PATH';

/** `command args…`, once its banner has printed every name of `wanted`. */
export function serve(command: string, args: string[], wanted: string[], timeoutMs = 20_000): Promise<Served> {
  const child: ChildProcessWithoutNullStreams = spawn(command, args, {
    env: { ...process.env, PYTHONUNBUFFERED: '1' },
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    const code = await exited;
    return { code, stdout, stderr };
  };
  return new Promise((resolve, reject) => {
    const env: Record<string, string> = {};
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} printed no ${wanted.join(', ')} in ${timeoutMs} ms: ${stderr}`));
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${command} (${error.message}): ${INSTALL}`));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`${command} exited (${code}) before its banner: ${stderr}`));
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      stdout += `${line}\n`;
      const match = /^([A-Z_]+)=(.*)$/.exec(line);
      if (match) env[match[1]] = match[2];
      if (wanted.every((name) => name in env)) {
        clearTimeout(timer);
        resolve({ env, stop });
      }
    });
  });
}

/** A fresh in-memory fake ContextQ with the given workspaces: `CONTEXT_API_URL`, `CONTEXT_API_KEY`. */
export function serveContextQ(...workspaces: string[]): Promise<Served> {
  const args = ['serve', '--memory', '--port', '0', ...workspaces.flatMap((w) => ['--workspace', w])];
  return serve('fake-contextq', args, ['CONTEXT_API_URL', 'CONTEXT_API_KEY']);
}

/** The scripted model playing the JSON script at `path`: `ANTHROPIC_BASE_URL`. */
export function serveModel(path: string): Promise<Served> {
  return serve('fake-anthropic', ['serve', path, '--port', '0'], ['ANTHROPIC_BASE_URL']);
}
