// Issue 30, item 1: an OpenAI-compatible endpoint that echoes the credential it was sent (in its error text,
// a JSON field, a header, a URL query, glued into a longer message) must not get that credential into the log,
// the store's file, a run() result, a listener payload or what the adapter throws, whatever the key looks like.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import type { IncomingHttpHeaders } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { deepseekModel, openaiModel } from '../../src/adapters/openai.js'
import type { ModelAdapter } from '../../src/adapters/types.js'
import { createAgent, userMessage, type SessionEvent } from '../../src/index.js'
import { sqliteStore } from '../../src/stores/index.js'
import { propertyRuns } from '../helpers.js'
import { startChatServer, type ChatServer, type Reply } from './chat-server.js'

const quiet = { error: () => {} }

const chars = (alphabet: string, minLength: number, maxLength: number) => fc.string({ unit: fc.constantFrom(...alphabet), minLength, maxLength })
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
const B64URL = `${ALNUM}-_`

/** The key formats providers hand out, and keys of no known shape at all. */
const keyFormats = {
  'sk-': chars(ALNUM, 20, 48).map((s) => `sk-${s}`),
  gsk_: chars(ALNUM, 52, 52).map((s) => `gsk_${s}`),
  AIza: chars(B64URL, 35, 35).map((s) => `AIza${s}`),
  hex32: chars('0123456789abcdef', 32, 32),
  jwt: fc.tuple(chars(B64URL, 16, 40), chars(B64URL, 20, 80), chars(B64URL, 20, 43)).map(([h, p, s]) => `eyJ${h}.eyJ${p}.${s}`),
  random: chars(`${ALNUM}._~+/=-`, 16, 64),
} as const

/** How an endpoint may echo what it was sent: the text of its error, extra body fields, response headers. */
type Echo = { message: string; fields?: Record<string, unknown>; headers?: Record<string, string> }
const echoStyles: Record<string, (key: string, authorization: string) => Echo> = {
  'plain text': (key) => ({ message: `Invalid API key: ${key}` }),
  'JSON body field': (key) => ({ message: `rejected ${JSON.stringify({ api_key: key })}`, fields: { api_key: key, param: key } }),
  'header echo': (_key, authorization) => ({
    message: `received authorization: ${authorization}`,
    headers: { 'x-echoed-authorization': authorization, 'www-authenticate': `Bearer realm="${authorization}"` },
  }),
  'URL query': (key) => ({ message: `upstream GET https://gateway.example/v1/check?key=${encodeURIComponent(key)}&v=2 failed` }),
  embedded: (key) => ({ message: `quota exceeded for credential${key}(tier free); contact support` }),
}

/** Where the echo comes back: an HTTP error status, or an error event inside a 200 stream. */
type Channel = 'status' | 'stream'

function replyFor(echo: Echo, channel: Channel, plain: boolean): Reply {
  if (channel === 'stream') return { kind: 'sse', events: [{ error: { message: echo.message, ...echo.fields } }], headers: echo.headers }
  if (plain) return { kind: 'text', status: 401, text: echo.message, headers: echo.headers }
  return { kind: 'status', status: 401, body: { error: { message: echo.message, type: 'invalid_request_error', ...echo.fields } }, headers: echo.headers }
}

/**
 * Every string reachable from `value`: own properties whether enumerable or not (an Error's message, stack and
 * cause), header lists, map and set entries. Why: a credential on any of them is reported to someone.
 */
function reachableText(value: unknown): string {
  const out: string[] = []
  const seen = new Set<unknown>()
  const visit = (x: unknown, depth: number) => {
    if (typeof x === 'string') return void out.push(x)
    if (typeof x !== 'object' || x === null || seen.has(x) || depth > 40) return
    seen.add(x)
    if (x instanceof Headers) for (const [name, v] of x) out.push(`${name}: ${v}`)
    if (x instanceof Map || x instanceof Set) for (const entry of x) visit(entry, depth + 1)
    for (const key of Reflect.ownKeys(x)) {
      const descriptor = Object.getOwnPropertyDescriptor(x, key)
      if (descriptor && 'value' in descriptor) visit(descriptor.value, depth + 1)
    }
  }
  visit(value, 0)
  return out.join('\n')
}

/** Throws naming where a credential (as sent, or percent-encoded) was found. */
function expectNoCredential(where: string, value: unknown, secret: string): void {
  const text = reachableText(value)
  for (const form of new Set([secret, encodeURIComponent(secret)])) {
    if (text.includes(form)) throw new Error(`${where} holds the credential ${JSON.stringify(secret)}:\n${text.slice(0, 2000)}`)
  }
}

/** What the adapter itself throws for one request (the cause chain included), read without an agent. */
async function thrownBy(model: ModelAdapter): Promise<unknown> {
  const request = { sessionId: 's', config: { provider: model.provider, model: 'm' }, messages: [userMessage('hi')], signal: new AbortController().signal }
  try {
    for await (const chunk of model.stream(request)) void chunk
  } catch (error) {
    return error
  }
  throw new Error('the request did not fail')
}

const bearer = (headers: IncomingHttpHeaders) => String(headers.authorization ?? '')

/** The adapter as each way of giving it a key builds it: options, the environment (read at the first request), a client. */
function modelFor(family: string, key: string, baseURL: string): ModelAdapter {
  switch (family) {
    case 'deepseek':
      return deepseekModel({ model: 'm', apiKey: key, baseURL })
    case 'key from the environment':
      process.env.OPENAI_API_KEY = key
      return openaiModel({ model: 'm', baseURL })
    case 'injected client':
      return openaiModel({ model: 'm', client: new OpenAI({ apiKey: key, baseURL, maxRetries: 0 }) })
    default:
      return openaiModel({ model: 'm', apiKey: key, baseURL })
  }
}

describe('the exact credential is redacted from what an adapter reports (issue 30)', () => {
  let server: ChatServer
  let answer: (headers: IncomingHttpHeaders) => Reply = () => ({ kind: 'status', status: 500, body: {} })
  const dir = mkdtempSync(join(tmpdir(), 'agentchart-redaction-'))
  const path = join(dir, 'log.db')
  const keys: string[] = []

  beforeAll(async () => {
    server = await startChatServer((_body, _received, headers) => answer(headers))
  })
  afterAll(async () => {
    delete process.env.OPENAI_API_KEY
    await server.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('a key the endpoint echoes, in any format and echo style, reaches no committed event, run() result, listener payload or thrown error', async () => {
    const store = sqliteStore({ path })
    let n = 0
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...(Object.keys(keyFormats) as (keyof typeof keyFormats)[])).chain((format) => keyFormats[format]),
          fc.constantFrom(...Object.keys(echoStyles)),
          fc.constantFrom<Channel>('status', 'stream'),
          fc.constantFrom('openai', 'deepseek', 'key from the environment', 'injected client'),
          async (key, style, channel, family) => {
            keys.push(key)
            answer = (headers) => replyFor(echoStyles[style](key, bearer(headers)), channel, style === 'plain text')
            const model = modelFor(family, key, server.baseURL)

            expectNoCredential('the error the adapter threw', await thrownBy(model), key)

            const sessionId = `s${++n}`
            const agent = await createAgent({ model, store, sessionId, retry: false, logger: quiet })
            const payloads: unknown[] = []
            for (const name of ['agent/error', 'agent/status', 'session/event', 'session/committed'] as const) {
              agent.on(name, (payload: unknown) => void payloads.push(payload))
            }
            agent.on('agent/request-error', (payload, next) => {
              payloads.push(payload)
              return next()
            })
            const result = await agent.run('hi')
            expect(result.end.kind).toBe('error')
            // the echo did come back, and what it said is kept, with the credential cut out of it
            expect(JSON.stringify(result.end)).toContain('[redacted]')
            expectNoCredential('the run() result', result, key)
            expectNoCredential('the session log', agent.session.events, key)
            expectNoCredential('a listener payload', payloads, key)
            await agent.dispose()
            expectNoCredential('the stored log', (await store.load(sessionId)) as SessionEvent[], key)
          },
        ),
        { numRuns: propertyRuns(60) },
      )
    } finally {
      await store.close()
    }
    // the database file itself (and its write-ahead log, if one is left)
    for (const file of readdirSync(dir)) {
      const bytes = readFileSync(join(dir, file)).toString('latin1')
      for (const key of keys) expect(bytes.includes(key), `${file} holds ${key}`).toBe(false)
    }
  }, 60_000)

  it('a user name and password in the base URL reach no error the adapter throws or the log', async () => {
    await fc.assert(
      fc.asyncProperty(chars(ALNUM, 3, 12), chars(`${ALNUM}-_.~`, 8, 32), async (user, password) => {
        answer = (headers) => replyFor(echoStyles['plain text'](password, bearer(headers)), 'status', true)
        const baseURL = server.baseURL.replace('http://', `http://${user}:${password}@`)
        const model = openaiModel({ model: 'm', apiKey: 'sk-test-key-0000', baseURL })
        expectNoCredential('the error the adapter threw', await thrownBy(model), password)
        const agent = await createAgent({ model, retry: false, logger: quiet })
        const payloads: unknown[] = []
        agent.on('agent/error', (payload) => void payloads.push(payload))
        const result = await agent.run('hi')
        expect(result.end.kind).toBe('error')
        expectNoCredential('the run() result', result, password)
        expectNoCredential('the session log', agent.session.events, password)
        expectNoCredential('a listener payload', payloads, password)
        await agent.dispose()
      }),
      { numRuns: propertyRuns(10) },
    )
  })
})
