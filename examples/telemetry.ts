// Spans of a tool-using turn: the agent hands them to an OpenTelemetry tracer as its log is committed, and
// exportSessionSpans gives the same spans from the log afterwards (a stored session, a replay).
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { z } from 'zod'
import { createAgent, createSession, defineTool } from '../src/index.js'
import { exportSessionSpans } from '../src/telemetry/index.js'
import { errorResponse, scriptedModel, textResponse, toolCallResponse } from '../src/testing/index.js'

export async function telemetryExample(): Promise<{ live: ReadableSpan[]; exported: ReadableSpan[] }> {
  // any SDK set-up works; in production an OTLP exporter (see below) instead of the in-memory one
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const tracer = provider.getTracer('weather-app')

  const weather = defineTool({
    name: 'weather',
    description: 'The forecast for a city',
    input: z.object({ city: z.string() }),
    executionMode: 'parallel',
    execute: ({ city }) => `${city}: sunny, 24 °C`,
  })
  const model = scriptedModel([
    errorResponse({ message: 'overloaded', code: 'SERVER', status: 503, providerRetryAfterMs: 5 }),
    toolCallResponse(
      [
        { id: 'call_1', name: 'weather', arguments: '{"city":"Lisbon"}' },
        { id: 'call_2', name: 'weather', arguments: '{"city":"Porto"}' },
      ],
      undefined,
      { usage: { inputTokens: 120, outputTokens: 30, cacheReadTokens: 100 } },
    ),
    textResponse('Sunny in both.', { usage: { inputTokens: 180, outputTokens: 8, cacheReadTokens: 120 } }),
  ])
  // a clock that moves 1 ms per logged event, so the times below are the same on every run
  let now = Date.UTC(2026, 0, 1)
  const session = createSession({ id: 'trip', now: () => now++ })
  const agent = createAgent({ model, tools: [weather], session, telemetry: { tracer } })
  await agent.run('Weather in Lisbon and Porto?')
  const live = [...exporter.getFinishedSpans()]

  // after the fact: the same log, the same spans
  exporter.reset()
  exportSessionSpans(agent.session.events, { tracer, sessionId: agent.id })
  return { live, exported: [...exporter.getFinishedSpans()] }
}
