/**
 * The agent end to end, offline: the real SDK's tool runner against `fake-anthropic serve`
 * (a JSON script of Claude's turns) and its memory tool against `fake-contextq serve`.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { afterEach, test } from 'node:test';

import Anthropic from '@anthropic-ai/sdk';

import { ask, textOf } from '../src/agent.ts';
import { serveContextQ, serveModel, type Served } from './served.ts';

const script = (name: string) => fileURLToPath(new URL(`./scripts/${name}`, import.meta.url));

let running: Served[] = [];

afterEach(async () => {
  await Promise.all(running.map((s) => s.stop()));
  running = [];
});

/** Both fakes, and an Anthropic client on the scripted model (no key, no retries). */
async function fakes(scriptName: string) {
  const [contextq, model] = await Promise.all([serveContextQ('acme'), serveModel(script(scriptName))]);
  running.push(contextq, model);
  const client = new Anthropic({ baseURL: model.env.ANTHROPIC_BASE_URL, apiKey: 'scripted', maxRetries: 0 });
  const options = { client, contextq: { baseUrl: contextq.env.CONTEXT_API_URL, apiKey: contextq.env.CONTEXT_API_KEY } };
  return { contextq, model, options };
}

/** What the fake ContextQ holds, through its REST API as any client sees it. */
async function contexts(contextq: Served): Promise<{ externalId: string; content: string; tags: string[] }[]> {
  const { CONTEXT_API_URL: url, CONTEXT_API_KEY: key } = contextq.env;
  const headers = { Authorization: `Bearer ${key}` };
  const page = (await (await fetch(`${url}/api/contexts?workspace=acme`, { headers })).json()) as { items: { id: number }[] };
  return Promise.all(page.items.map(async (row) => (await fetch(`${url}/api/contexts/${row.id}`, { headers })).json()));
}

/** Stop the scripted model: exit 0 means every scripted turn was played, none overrun. */
async function played(model: Served): Promise<string> {
  running = running.filter((s) => s !== model);
  const { code, stdout, stderr } = await model.stop();
  assert.equal(code, 0, `the scripted model was not played as written:\n${stdout}\n${stderr}`);
  return stdout;
}

test('the agent remembers a preference in ContextQ', async () => {
  const { contextq, model, options } = await fakes('remember.json');

  const reply = await ask('Remember that I prefer TypeScript.', options);

  assert.equal(textOf(reply), 'Noted: you prefer TypeScript.');
  const [row, ...others] = await contexts(contextq);
  assert.deepEqual(others, []);
  assert.equal(row.externalId, 'mem-tool:acme/prefs.md');
  assert.equal(row.content, 'Prefers TypeScript.\n');
  assert.deepEqual(row.tags, ['mem-tool']);
  const transcript = await played(model);
  assert.match(transcript, /Here are the files and directories in \/memories:\\n- acme\//);
});

test('the agent edits a memory file it finds in ContextQ', async () => {
  const { contextq, model, options } = await fakes('update.json');
  const memory = { baseUrl: contextq.env.CONTEXT_API_URL, apiKey: contextq.env.CONTEXT_API_KEY };
  const { ContextQMemory } = await import('../src/contextqMemory.ts');
  await new ContextQMemory(memory).create({ path: '/memories/acme/prefs.md', file_text: 'Prefers TypeScript.\n' });

  const reply = await ask('I like Rust too.', options);

  assert.equal(textOf(reply), 'Updated: TypeScript and Rust.');
  const [row] = await contexts(contextq);
  assert.equal(row.content, 'Prefers TypeScript and Rust.\n');
  const transcript = await played(model);
  assert.match(transcript, /1\\tPrefers TypeScript\./);
});
