/**
 * The fake ContextQ's `/mcp` as the MCP TypeScript SDK's own `Client` sees it, over its
 * streamable HTTP transport with the API key as a bearer header: an unknown tool and a
 * bad argument come back as `isError` results (as the SDK's `McpServer` answers them),
 * not as JSON-RPC errors that would make `callTool` throw, and a save reads back.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { serveContextQ, type Served } from './served.ts';

let contextq: Served;
let client: Client;

before(async () => {
  contextq = await serveContextQ('acme');
  const { CONTEXT_API_URL: url, CONTEXT_API_KEY: key } = contextq.env;
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  client = new Client({ name: 'contextq-agent-ts-example', version: '0.0.0' });
  await client.connect(transport);
});

after(async () => {
  await client?.close();
  await contextq?.stop();
});

/** The text of a result's single text block. */
function textOf(result: Awaited<ReturnType<Client['callTool']>>): string {
  const content = result.content as { type: string; text?: string }[];
  assert.equal(content.length, 1, JSON.stringify(result));
  assert.equal(content[0].type, 'text');
  return content[0].text ?? '';
}

test('the SDK client lists the fake ContextQ tools', async () => {
  const { tools } = await client.listTools();
  const names = tools.map((tool) => tool.name);
  for (const name of ['ctx_save', 'ctx_get']) assert.ok(names.includes(name), names.join(', '));
});

test('an unknown tool is an error result, not a thrown protocol error', async () => {
  const result = await client.callTool({ name: 'ctx_no_such_tool', arguments: {} });
  assert.equal(result.isError, true);
  assert.equal(textOf(result), 'MCP error -32602: Tool ctx_no_such_tool not found');
});

test('a bad argument is an error result naming the input validation failure', async () => {
  await client.listTools(); // the client then knows ctx_get's output schema, as an agent would
  const result = await client.callTool({ name: 'ctx_get', arguments: { id: 'not-a-number' } });
  assert.equal(result.isError, true);
  const text = textOf(result);
  const head = 'MCP error -32602: Input validation error: Invalid arguments for tool ctx_get: ';
  assert.ok(text.startsWith(head), text);
  const issues = JSON.parse(text.slice(head.length)) as { code: string; path: string[] }[];
  assert.deepEqual(
    issues.map((issue) => [issue.code, issue.path]),
    [['invalid_type', ['id']]],
  );
});

test('a save through ctx_save reads back through ctx_get', async () => {
  const saved = await client.callTool({ name: 'ctx_save', arguments: { content: 'Deploys go out on Tuesdays.' } });
  assert.notEqual(saved.isError, true, JSON.stringify(saved));
  const { id } = saved.structuredContent as { id: number };
  assert.equal(typeof id, 'number');

  const got = await client.callTool({ name: 'ctx_get', arguments: { id } });
  assert.notEqual(got.isError, true, JSON.stringify(got));
  const row = got.structuredContent as { id: number; content: string };
  assert.equal(row.id, id);
  assert.equal(row.content, 'Deploys go out on Tuesdays.');
});
