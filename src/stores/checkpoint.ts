// Checkpoints: the derived state a stored session needs to go on, kept by the
// store beside the log at safe points (no turn open) and committed with the
// batch that reaches them. An open reads the latest one and the log's tail
// after it instead of the whole log; one that disagrees with the log is refused.
import { createHash } from 'node:crypto'
import { AgentchartError, ConfigError, StoredLogError } from '../errors.js'
import { applySplice, duplicatePending } from '../machines/inbox.js'
import type { InboxLists } from '../machines/types.js'
import type { SessionEvent } from '../session/schemas.js'
import { recentEvents as inMemory, RESUME, Session, type PrefixReader, type SessionResume } from '../session/session.js'
import { surfaceNodeOf } from '../session/surface.js'

/** The facts of a log the agent reads when it takes a session over, folded event by event. */
export interface ResumeFacts {
  /** How many events were folded. */
  length: number
  /** The highest `turn/start` turn (0 for none). */
  lastTurn: number
  /** Whether any `request/header` was logged. */
  priorHeader: boolean
  /** The data of the last `request/context`, or null. */
  lastRoute: unknown
  /** The inbox lists the splices since the latest fork marker leave. */
  inbox: InboxLists
  /** Whether a turn is open (a checkpoint is taken only when none is). */
  openTurn: boolean
  /** Whether any `session/end-seed` was logged (turn numbering before the first one only increases). */
  endSeed: boolean
}

/** The stored form of a checkpoint (JSON); a form of another `v` is refused (the open validates the whole log and stores a new one). */
interface Checkpoint {
  readonly v: 2
  readonly session: string
  /** The events [0, length) it describes: the tail starts at this seq. */
  readonly length: number
  /** The event at `length - 1`, named by seq, time, type and the hash of its JSON text. */
  readonly last: { readonly seq: number; readonly time: number; readonly type: string; readonly hash: string }
  /** The surface node seqs, in surface order. */
  readonly surface: readonly number[]
  readonly generation: number
  /** The hash of the derived history's JSON text. */
  readonly messages: string
  readonly facts: ResumeFacts
  /** The hash of everything above. */
  readonly digest: string
}

/** What a store hands the opener when it holds a checkpoint: the checkpoint and synchronous reads of the log. */
export interface StoredCheckpoint {
  /** The checkpoint as stored (parsed JSON; the opener checks it). */
  readonly checkpoint: unknown
  /** The stored log's length. */
  readonly length: number
  /** Reads stored events [from, to), chunk rows expanded. */
  readonly read: PrefixReader
}

const hash = (text: string) => createHash('sha256').update(text).digest('base64url')

const emptyFacts = (): ResumeFacts => ({
  length: 0,
  lastTurn: 0,
  priorHeader: false,
  lastRoute: null,
  inbox: { nextTurn: [], nextStep: [] },
  openTurn: false,
  endSeed: false,
})

/** Folds one event into `facts` (its seq must be `facts.length`); an inbox splice that does not replay throws, naming its seq, and changes nothing. */
function foldFact(facts: ResumeFacts, event: SessionEvent): void {
  switch (event.type) {
    case 'turn/start':
      facts.lastTurn = Math.max(facts.lastTurn, event.data.turn)
      facts.openTurn = true
      break
    case 'turn/end':
      facts.openTurn = false
      break
    case 'request/header':
      facts.priorHeader = true
      break
    case 'request/context':
      facts.lastRoute = event.data
      break
    case 'session/end-seed':
      facts.endSeed = true
      // a fork starts with empty lists: splices before its marker are its parent's
      if (event.data.fork !== undefined) facts.inbox = { nextTurn: [], nextStep: [] }
      break
    case 'agent/inbox/spliced': {
      const seq = event.seq
      let lists: InboxLists
      try {
        lists = applySplice(facts.inbox, event.data)
      } catch (error) {
        throw new ConfigError(`inbox splice at seq ${seq} is inconsistent with the replayed lists: ${(error as Error).message}`, { path: `events[${seq}]` })
      }
      const twice = duplicatePending(lists)
      if (twice !== null) throw new ConfigError(`inbox splice at seq ${seq} leaves message ${JSON.stringify(twice)} pending twice`, { path: `events[${seq}]` })
      facts.inbox = lists
      break
    }
  }
  facts.length = event.seq + 1
}

const factsBySession = new WeakMap<Session, ResumeFacts>()

/** The facts of a session's log as it stands now, folded once and then only for what was appended since. */
export function factsOf(session: Session): ResumeFacts {
  let facts = factsBySession.get(session)
  if (facts === undefined) factsBySession.set(session, (facts = emptyFacts()))
  while (facts.length < session.length) foldFact(facts, session.at(facts.length)!)
  return facts
}

/** The session's checkpoint as JSON text, or undefined while a turn is open. */
export function takeCheckpoint(session: Session): { length: number; text: string; nodes: number } | undefined {
  const facts = factsOf(session)
  if (facts.openTurn || session.length === 0) return undefined
  const last = session.at(session.length - 1)!
  const body = {
    v: 2 as const,
    session: session.id,
    length: session.length,
    last: { seq: last.seq, time: last.time, type: last.type, hash: hash(JSON.stringify(last)) },
    surface: session.surface(),
    generation: session.replaceGeneration,
    messages: hash(JSON.stringify(session.deriveMessages())),
    facts,
  }
  const checkpoint: Checkpoint = { ...body, digest: hash(JSON.stringify(body)) }
  return { length: session.length, text: JSON.stringify(checkpoint), nodes: body.surface.length }
}

/** Where a stored checkpoint's tail starts, read by a store before it reads the tail; undefined for a malformed value. */
export function checkpointLength(value: unknown): number | undefined {
  const length = (value as { length?: unknown } | null)?.length
  return typeof length === 'number' && Number.isSafeInteger(length) && length > 0 ? length : undefined
}

/** A stored checkpoint's value and where its tail starts; undefined when the text is not a checkpoint. */
export function parseCheckpoint(text: string): { value: unknown; length: number } | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  const length = checkpointLength(value)
  return length === undefined ? undefined : { value, length }
}

/** A refusal of stored events (a seed's, or a tail's after its checkpoint) as the StoredLogError an open fails with, naming the seq. */
export function storedLogError(sessionId: string, error: AgentchartError): StoredLogError {
  const at = /^(?:seed|events)\[(\d+)\]/.exec(error.path ?? error.message)
  const seq = at ? Number(at[1]) : -1
  const detail = error.message.replace(/^seed\[\d+\]:?\s*/, '')
  return new StoredLogError(sessionId, seq, detail, { cause: error, ...(error.path !== undefined ? { path: error.path } : {}) })
}

/** Why a checkpoint was not used: the open validates the whole log instead. */
class CheckpointRefusal extends Error {
  override readonly name = 'CheckpointRefusal'
}

const isSeq = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0

/**
 * The session a checkpoint and the stored tail after it make, checked against the log: the checkpoint's own digest,
 * its session id and length, the stored event it ends with (seq, time, type and hash), its surface events (each a
 * stored surface event, their history's hash), and the tail, validated event by event on top of it.
 * Throws CheckpointRefusal when any of it disagrees.
 */
function sessionFromCheckpoint(sessionId: string, stored: StoredCheckpoint, tail: readonly unknown[], now?: () => number): Session {
  const refuse = (why: string): never => {
    throw new CheckpointRefusal(`session ${sessionId}: the checkpoint ${why}`)
  }
  const cp = stored.checkpoint as Partial<Checkpoint> | null
  if (typeof cp !== 'object' || cp === null || cp.v !== 2) return refuse('has an unknown form')
  const { digest, ...body } = cp
  if (typeof digest !== 'string' || hash(JSON.stringify(body)) !== digest) refuse('does not match its digest')
  if (cp.session !== sessionId) refuse(`belongs to session ${String(cp.session)}`)
  const length = cp.length
  if (!isSeq(length) || length === 0 || length > stored.length) return refuse(`covers ${String(length)} events but ${stored.length} are stored`)
  if (tail.length !== stored.length - length) refuse(`tail holds ${tail.length} events, not ${stored.length - length}`)
  const surface: unknown = cp.surface
  if (!Array.isArray(surface) || !surface.every((seq: unknown) => isSeq(seq) && seq < length)) return refuse('names a surface node outside what it covers')
  if (!isSeq(cp.generation)) refuse('has no replace generation')
  const facts = cp.facts
  if (
    typeof facts !== 'object' ||
    facts === null ||
    facts.length !== length ||
    facts.openTurn !== false ||
    typeof facts.endSeed !== 'boolean' ||
    !isSeq(facts.lastTurn)
  )
    return refuse('has no facts for its length')
  const [last] = stored.read(length - 1, length) as [SessionEvent | undefined]
  const named = cp.last
  if (last === undefined || named === undefined || last.seq !== named.seq || last.time !== named.time || last.type !== named.type)
    refuse(`ends with an event the log does not hold at seq ${length - 1}`)
  if (hash(JSON.stringify(last)) !== named!.hash) refuse(`ends with seq ${length - 1} as it was not stored`)
  const surfaceEvents = (surface as number[]).map((seq) => stored.read(seq, seq + 1)[0])
  // the history the surface events give must be the one the checkpoint was taken with; only then is the tail judged on it
  let before: unknown
  try {
    before = surfaceEvents.flatMap((event) => {
      const message = surfaceNodeOf(event as SessionEvent).message
      return message === undefined ? [] : [message]
    })
  } catch {
    refuse('names surface nodes that are not surface events')
  }
  if (hash(JSON.stringify(before)) !== cp.messages) refuse('names surface nodes whose history is not the one it was taken with')
  const { lastTurn, endSeed } = facts
  const resume: SessionResume = { base: length, surface: surfaceEvents, last, generation: cp.generation!, lastTurn, endSeed, tail, read: stored.read }
  let session: Session
  try {
    session = new Session({ id: sessionId, ...(now !== undefined ? { now } : {}), [RESUME]: resume } as ConstructorParameters<typeof Session>[0])
  } catch (error) {
    // the tail is refused as a full open refuses it: the log is damaged there, whatever the checkpoint says
    if (error instanceof AgentchartError && error.path?.startsWith('seed[') === true) throw storedLogError(sessionId, error)
    throw new CheckpointRefusal(`session ${sessionId}: the checkpoint and the log's tail do not make a valid session: ${(error as Error).message}`, {
      cause: error,
    })
  }
  factsBySession.set(session, { ...facts, inbox: { nextTurn: [...facts.inbox.nextTurn], nextStep: [...facts.inbox.nextStep] } })
  try {
    factsOf(session)
  } catch (error) {
    // an inbox splice of the tail that does not replay is refused as a full open refuses it (IN-14)
    throw error instanceof ConfigError ? storedLogError(sessionId, error) : error
  }
  return session
}

/**
 * The events a taking-over agent reads for the open turn (repair, approval waits): those kept in memory, which
 * start at a safe point, so an open turn lies wholly among them.
 */
export const recentEvents = (session: Session): readonly SessionEvent[] => inMemory(session)

/** Stored logs up to this many events are validated whole on open by default (`validate: 'auto'`) (about 12 ms at 6 µs an event). */
export const FULL_OPEN_UP_TO = 2000

/**
 * The session an open hands out: from the checkpoint when the store gave one and it agrees with the log, else
 * `full` over the whole stored log (read in the same snapshot). `refused` hears why a checkpoint was not used.
 */
export function openedSession(
  sessionId: string,
  events: readonly unknown[],
  stored: StoredCheckpoint | undefined,
  full: (events: readonly unknown[]) => Session,
  refused?: (refusal: CheckpointRefusal) => void,
  fullUpTo = 0,
): Session {
  if (stored === undefined) return full(events)
  // a log this short is validated whole: it costs about what the checkpoint saves, and finds damage anywhere in it
  if (stored.length <= fullUpTo) return full(stored.read(0, stored.length))
  try {
    return sessionFromCheckpoint(sessionId, stored, events)
  } catch (error) {
    if (!(error instanceof CheckpointRefusal)) throw error
    refused?.(error)
    return full(stored.read(0, stored.length))
  }
}
