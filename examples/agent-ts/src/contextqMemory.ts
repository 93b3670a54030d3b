/**
 * Claude's memory tool kept in ContextQ, over its REST API: the path model and the
 * command-to-endpoint mapping of ContextQ's own `@contextq/memory-tool` package, cut down
 * to what an example needs. `/memories/<workspace>/<rest>` is one context of that
 * workspace, found by the external id `mem-tool:<workspace>/<rest>` and tagged `mem-tool`.
 */
import type { MemoryToolHandlers } from '@anthropic-ai/sdk/helpers/beta/memory';

export interface ContextQOptions {
  /** `sk_live_…`; defaults to `CONTEXT_API_KEY`. */
  apiKey?: string;
  /** Defaults to `CONTEXT_API_URL`, else the dev stack's `http://localhost:38200`. */
  baseUrl?: string;
  /** Stamped on every row this tool writes, and what its directory listings read. */
  tag?: string;
}

interface Context {
  id: number;
  workspace: string | null;
  content: string;
  externalId: string | null;
}

interface Summary {
  id: number;
  externalId: string | null;
}

const ROOT = '/memories';

/** A ContextQ refusal, with the status and the error body's code and message. */
export class ContextQError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(`ContextQ ${status} ${code}: ${message}`);
  }
}

export class ContextQMemory implements MemoryToolHandlers {
  readonly #apiKey: string;
  readonly #baseUrl: string;
  readonly #tag: string;

  constructor(options: ContextQOptions = {}) {
    const apiKey = options.apiKey ?? process.env.CONTEXT_API_KEY;
    if (!apiKey) throw new Error('ContextQMemory: no API key (pass apiKey or set CONTEXT_API_KEY)');
    this.#apiKey = apiKey;
    this.#baseUrl = (options.baseUrl ?? process.env.CONTEXT_API_URL ?? 'http://localhost:38200').replace(/\/+$/, '');
    this.#tag = options.tag ?? 'mem-tool';
  }

  async view({ path }: { path: string }): Promise<string> {
    const { workspace, rest } = locate(path);
    if (workspace === null) {
      const page = await this.#call<{ items: { slug: string }[] }>('GET', '/api/workspaces');
      return listing(ROOT, page.items.map((w) => `${w.slug}/`));
    }
    const file = rest === '' ? null : await this.#file(workspace, rest);
    if (file) return numbered(file.content);
    const names = await this.#under(workspace, rest);
    if (names.length === 0 && rest !== '') throw new Error(`The path ${path} does not exist.`);
    return listing(path, names.map((n) => n.name));
  }

  async create({ path, file_text }: { path: string; file_text: string }): Promise<string> {
    const { workspace, rest } = locate(path);
    if (workspace === null || rest === '') throw new Error(`Cannot create ${path}: not a file path`);
    await this.#call('POST', '/api/contexts/bulk-upsert', {
      contexts: [
        {
          type: 'reference',
          title: rest,
          content: file_text,
          workspace,
          tags: [this.#tag],
          externalId: externalId(workspace, rest),
        },
      ],
    });
    return `File created successfully at: ${path}`;
  }

  async str_replace(command: { path: string; old_str: string; new_str: string }): Promise<string> {
    const file = await this.#existing(command.path);
    const count = file.content.split(command.old_str).length - 1;
    if (count !== 1) {
      const why = count === 0 ? 'did not appear verbatim' : `appears ${count} times`;
      throw new Error(`No replacement was performed: old_str ${why} in ${command.path}.`);
    }
    await this.#write(file, file.content.replace(command.old_str, () => command.new_str));
    return 'The memory file has been edited.';
  }

  async insert(command: { path: string; insert_line: number; insert_text: string }): Promise<string> {
    const file = await this.#existing(command.path);
    const lines = file.content.split('\n');
    if (command.insert_line < 0 || command.insert_line > lines.length) {
      throw new Error(`Invalid insert_line ${command.insert_line}: ${command.path} has ${lines.length} lines.`);
    }
    lines.splice(command.insert_line, 0, command.insert_text.replace(/\n$/, ''));
    await this.#write(file, lines.join('\n'));
    return `The file ${command.path} has been edited.`;
  }

  async delete({ path }: { path: string }): Promise<string> {
    const { workspace, rest } = locate(path);
    if (workspace === null) throw new Error('Cannot delete the /memories directory itself');
    const file = rest === '' ? null : await this.#file(workspace, rest);
    const ids = file ? [file.id] : (await this.#under(workspace, rest)).map((n) => n.id);
    if (ids.length === 0) throw new Error(`The path ${path} does not exist.`);
    for (const id of ids) await this.#call('DELETE', `/api/contexts/${id}`);
    return `Successfully deleted ${path}`;
  }

  async rename({ old_path, new_path }: { old_path: string; new_path: string }): Promise<string> {
    const file = await this.#existing(old_path);
    await this.create({ path: new_path, file_text: file.content });
    await this.#call('DELETE', `/api/contexts/${file.id}`);
    return `Successfully renamed ${old_path} to ${new_path}`;
  }

  async #file(workspace: string, rest: string): Promise<Context | null> {
    try {
      return await this.#call<Context>('GET', `/api/contexts/by-external/${encodeURIComponent(externalId(workspace, rest))}`);
    } catch (error) {
      if (error instanceof ContextQError && error.status === 404) return null;
      throw error;
    }
  }

  async #existing(path: string): Promise<Context> {
    const { workspace, rest } = locate(path);
    const file = workspace === null || rest === '' ? null : await this.#file(workspace, rest);
    if (!file) throw new Error(`The path ${path} does not exist.`);
    return file;
  }

  async #write(file: Context, content: string): Promise<void> {
    await this.#call('PUT', `/api/contexts/${file.id}`, { content });
  }

  /** This tool's rows of `workspace` below `directory`, named relative to it. */
  async #under(workspace: string, directory: string): Promise<{ id: number; name: string }[]> {
    const query = new URLSearchParams({ workspace, tag: this.#tag, limit: '500' });
    const page = await this.#call<{ items: Summary[] }>('GET', `/api/contexts?${query}`);
    const prefix = externalId(workspace, directory === '' ? '' : `${directory}/`);
    return page.items
      .filter((row) => row.externalId?.startsWith(prefix))
      .map((row) => ({ id: row.id, name: (row.externalId ?? '').slice(prefix.length) }));
  }

  async #call<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(this.#baseUrl + path, {
      method,
      headers: {
        Authorization: `Bearer ${this.#apiKey}`,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (response.status === 204) return undefined as T;
    const text = await response.text();
    if (!response.ok) {
      let code = 'error';
      let message = text;
      try {
        const parsed = JSON.parse(text) as { error?: string; message?: string };
        code = parsed.error ?? code;
        message = parsed.message ?? message;
      } catch {
        // not JSON: keep the text
      }
      throw new ContextQError(response.status, code, message);
    }
    return JSON.parse(text) as T;
  }
}

/** `/memories/<workspace>/<rest>` split; anything outside `/memories` is refused. */
function locate(path: string): { workspace: string | null; rest: string } {
  const parts = path.split('/').filter((p) => p !== '');
  if (parts[0] !== 'memories' || parts.includes('..') || parts.includes('.')) {
    throw new Error(`The path ${path} is outside ${ROOT}`);
  }
  if (parts.length === 1) return { workspace: null, rest: '' };
  return { workspace: parts[1].toLowerCase(), rest: parts.slice(2).join('/') };
}

function externalId(workspace: string, rest: string): string {
  return `mem-tool:${workspace}/${rest}`;
}

function listing(path: string, names: string[]): string {
  return [`Here are the files and directories in ${path}:`, ...names.sort().map((n) => `- ${n}`)].join('\n');
}

function numbered(content: string): string {
  return content
    .split('\n')
    .map((line, i) => `${String(i + 1).padStart(6)}\t${line}`)
    .join('\n');
}
