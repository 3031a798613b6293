// The spans leave the process as any OpenTelemetry spans do: the SDK's OTLP/HTTP exporter posts them (JSON) to
// a collector; here a loopback receiver the test starts, which checks the tree it was sent.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent, defineTool } from '../../src/index.js'
import { scriptedModel, textResponse, toolCallResponse } from '../../src/testing/index.js'
import { track } from '../helpers.js'

interface OtlpSpan {
  name: string
  traceId: string
  spanId: string
  parentSpanId?: string
  startTimeUnixNano: string
  endTimeUnixNano: string
  attributes: { key: string; value: Record<string, unknown> }[]
}

/** A collector on 127.0.0.1 that keeps every span posted to /v1/traces. */
async function startReceiver() {
  const spans: OtlpSpan[] = []
  const paths: string[] = []
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`)
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }
      for (const resource of body.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans)
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}/v1/traces`, spans, paths, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})

describe('telemetry over OTLP/HTTP', () => {
  it('a tool-using turn reaches a collector as one trace: invoke_agent > step > chat / execute_tool, with the GenAI attributes', async () => {
    const receiver = await startReceiver()
    closers.push(receiver.close)
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: receiver.url }))] })
    closers.push(() => provider.shutdown())
    const add = defineTool({ name: 'add', description: 'adds', input: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => String(a + b) })
    const model = scriptedModel([toolCallResponse([{ id: 'c1', name: 'add', arguments: '{"a":2,"b":3}' }]), textResponse('5')])
    const agent = track(createAgent({ model, tools: [add], logger: { error: () => {} }, telemetry: { tracer: provider.getTracer('otlp-test') } }))
    expect((await agent.run('2+3?')).text).toBe('5')
    await provider.forceFlush()

    expect(new Set(receiver.paths)).toEqual(new Set(['POST /v1/traces application/json']))
    const byId = new Map(receiver.spans.map((s) => [s.spanId, s]))
    const parentName = (s: OtlpSpan) => (s.parentSpanId ? (byId.get(s.parentSpanId)?.name ?? 'missing') : null)
    expect(receiver.spans.map((s) => [s.name, parentName(s)]).sort()).toEqual(
      [
        ['invoke_agent', null],
        ['step', 'invoke_agent'],
        ['step', 'invoke_agent'],
        ['chat scripted-1', 'step'],
        ['chat scripted-1', 'step'],
        ['execute_tool add', 'step'],
      ].sort(),
    )
    expect(new Set(receiver.spans.map((s) => s.traceId)).size).toBe(1)
    const attributes = (name: string) =>
      Object.fromEntries(receiver.spans.find((s) => s.name === name)!.attributes.map((a) => [a.key, Object.values(a.value)[0]]))
    expect(attributes('execute_tool add')).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'add',
      'gen_ai.tool.call.id': 'c1',
      'gen_ai.conversation.id': agent.id,
    })
    expect(attributes('invoke_agent')).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'agentchart.turn.end_reason': 'completed' })
    // times are the log's: the tool span lies inside its turn
    const turn = receiver.spans.find((s) => s.name === 'invoke_agent')!
    const call = receiver.spans.find((s) => s.name === 'execute_tool add')!
    expect(BigInt(call.startTimeUnixNano) >= BigInt(turn.startTimeUnixNano) && BigInt(call.endTimeUnixNano) <= BigInt(turn.endTimeUnixNano)).toBe(true)
  })
})
