// Test plumbing for spans: an in-memory trace SDK, and finished spans as a canonical tree (ids dropped, times
// relative to the log's first event) so a live run and an export of its log can be compared whole.
import type { Context, Span, SpanOptions, Tracer } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'

export function memoryTracer() {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  return { exporter, provider, tracer: provider.getTracer('agentchart-test'), spans: () => exporter.getFinishedSpans() }
}

/**
 * `inner` watched: `open()` names the spans started and not yet ended (an SDK never exports those). With `failAfter`,
 * every startSpan after that many throws, as a tracer whose exporter went down mid-run.
 */
export function watchedTracer(inner: Tracer, failAfter = Infinity) {
  const open = new Map<Span, string>()
  let started = 0
  const tracer = {
    startSpan(name: string, options?: SpanOptions, context?: Context): Span {
      if (++started > failAfter) throw new Error('exporter down')
      const span = inner.startSpan(name, options, context)
      open.set(span, name)
      const end = span.end.bind(span)
      span.end = (time) => {
        open.delete(span)
        end(time)
      }
      return span
    },
  }
  return { tracer, open: () => [...open.values()] }
}

/** A clock that moves 1 ms per reading: each logged event gets its own time, so overlaps are structural, not timing luck. */
export function steppingClock(start = 1_700_000_000_000) {
  let now = start
  return () => now++
}

export const ms = (time: readonly [number, number]) => time[0] * 1000 + time[1] / 1e6

export interface SpanNode {
  name: string
  kind: number
  start: number
  end: number
  attributes: Record<string, unknown>
  status: { code: number; message?: string }
  events: { name: string; time: number; attributes: Record<string, unknown> }[]
  children: SpanNode[]
}

/** The finished spans as trees of roots, children in start order (ties by name and attributes). */
export function spanTree(spans: readonly ReadableSpan[], origin?: number): SpanNode[] {
  const t0 = origin ?? Math.min(...spans.map((s) => ms(s.startTime)))
  const byParent = new Map<string | undefined, ReadableSpan[]>()
  const ids = new Set(spans.map((s) => s.spanContext().spanId))
  for (const span of spans) {
    const parent = span.parentSpanContext?.spanId
    const key = parent !== undefined && ids.has(parent) ? parent : undefined
    byParent.set(key, [...(byParent.get(key) ?? []), span])
  }
  const node = (span: ReadableSpan): SpanNode => ({
    name: span.name,
    kind: span.kind,
    start: ms(span.startTime) - t0,
    end: ms(span.endTime) - t0,
    attributes: { ...span.attributes },
    status: span.status.message !== undefined ? { code: span.status.code, message: span.status.message } : { code: span.status.code },
    events: span.events.map((e) => ({ name: e.name, time: ms(e.time) - t0, attributes: { ...e.attributes } })),
    children: order((byParent.get(span.spanContext().spanId) ?? []).map(node)),
  })
  return order((byParent.get(undefined) ?? []).map(node))
}

const order = (nodes: SpanNode[]) =>
  nodes.sort((a, b) => a.start - b.start || a.end - b.end || JSON.stringify([a.name, a.attributes]).localeCompare(JSON.stringify([b.name, b.attributes])))

/** One line per span, indented by depth: `name [start-end] key=value ...` with the keys asked for. */
export function drawTree(nodes: readonly SpanNode[], keys: readonly string[], depth = 0): string[] {
  return nodes.flatMap((n) => {
    const shown = keys.filter((k) => n.attributes[k] !== undefined).map((k) => `${k}=${JSON.stringify(n.attributes[k])}`)
    const status = n.status.code === 2 ? ' ERROR' : ''
    const line = `${'  '.repeat(depth)}${n.name} [${n.start}-${n.end}]${status}${shown.length ? ' ' + shown.join(' ') : ''}`
    return [line, ...drawTree(n.children, keys, depth + 1)]
  })
}
