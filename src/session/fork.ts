// Forks (SS-14): a new session seeded with a prefix of another, up to an
// inclusive boundary seq outside any open turn. The seed ends with a
// `session/end-seed{fork}` marker naming the parent, the boundary and the
// seed's length, so a resumed fork ignores the inbox splices it inherited (IN-14).
import { ConfigError, ForkError } from '../errors.js'
import { describeValue } from '../values/foreign.js'
import { openTurnOf } from './repair.js'
import type { SessionEvent, SessionEventOf } from './schemas.js'
import { createSession, isSessionLike, type Session } from './session.js'

export interface ForkOptions {
  /** The last seq the fork inherits (inclusive); no turn may be open after it. */
  upTo: number
  /** The fork's session id (default: a random UUID); never the parent's. */
  id?: string
  /** The fork marker's time (default: the parent's clock is not shared, so `Date.now()`). */
  now?: () => number
}

/** The lineage a fork's marker records. */
export interface ForkLineage {
  parent: string
  upTo: number
  seedLength: number
}

/**
 * A new session whose history is the parent's prefix up to `upTo`. Why: "try another answer from here"
 * without touching the parent; an agent created over the fork continues it like any stored log.
 */
export function forkSession(parent: Session, options: ForkOptions): Session {
  // an Agent passed for its session is refused by name, not read as a halted session (which points at the store)
  if (!isSessionLike(parent)) {
    throw new ConfigError(`forkSession needs a Session (for an agent: agent.fork({ upTo }) or forkSession(agent.session, ...)), got ${describeValue(parent)}`, {
      path: 'parent',
    })
  }
  if (!options || typeof options !== 'object') throw new ForkError('FORK_UNKNOWN_SEQ', 'forkSession needs { upTo }', { path: 'upTo' })
  if (parent.halted !== null) throw new ForkError('FORK_DETACHED', `session ${parent.id} is halted (its store failed): fork its stored log instead`)
  const { upTo } = options
  const events = parent.events
  if (typeof upTo !== 'number' || !Number.isInteger(upTo) || upTo < 0 || upTo >= events.length) {
    throw new ForkError('FORK_UNKNOWN_SEQ', `upTo must be a seq of session ${parent.id} (0..${events.length - 1}), got ${String(upTo)}`, { path: 'upTo' })
  }
  const prefix = events.slice(0, upTo + 1)
  const open = openTurnOf(prefix)
  if (open !== null) {
    throw new ForkError(
      'FORK_INSIDE_TURN',
      `seq ${upTo} lies inside turn ${open.turn} (opened at seq ${open.turnSeq}): fork at its turn/end or before its turn/start`,
      { path: 'upTo' },
    )
  }
  const id = options.id ?? crypto.randomUUID()
  if (id === parent.id) throw new ForkError('FORK_ID_TAKEN', `a fork needs an id of its own, not its parent's (${id})`, { path: 'id' })
  const seedLength = prefix.length + 1
  // the seq as the prefix ends (an upTo of -0 is seq 0)
  const lineage: ForkLineage = { parent: parent.id, upTo: prefix.length - 1, seedLength }
  const now = options.now ?? Date.now
  if (typeof now !== 'function') throw new ConfigError(`now must be a function, got ${describeValue(now)}`, { path: 'now' })
  const time = now()
  if (typeof time !== 'number' || !Number.isFinite(time))
    throw new ConfigError(`now must return a finite number of epoch ms, got ${describeValue(time)}`, { path: 'now' })
  // -0 is the instant 0, as JSON writes it
  const marker = { seq: prefix.length, time: time === 0 ? 0 : time, type: 'session/end-seed', data: { fork: lineage } }
  return createSession({ id, seed: [...prefix, marker] })
}

/** The lineage of the latest fork a log descends from, or null. Why: IN-14 skips what came before it. */
export function forkLineageOf(events: readonly SessionEvent[]): (ForkLineage & { seq: number }) | null {
  const marker = events.findLast((e) => e.type === 'session/end-seed' && e.data.fork !== undefined) as SessionEventOf<'session/end-seed'> | undefined
  return marker ? { ...marker.data.fork!, seq: marker.seq } : null
}
