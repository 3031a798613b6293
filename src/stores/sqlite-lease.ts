// When a SQLite lease has lapsed, judged without trusting anyone's wall clock.
// Every process sharing a SQLite file runs on one machine (WAL needs shared
// memory), so they share its monotonic clock, which a wall-clock step (NTP,
// `date -s`, a skewed Date.now) never moves. The holder stamps each renewal
// and commit with that clock, a beat counter and its boot; a reader says the
// lease lapsed once the machine's clock is leaseMs past the last stamp, once
// the machine rebooted since, or once it watched the beat stand still for
// leaseMs on its own clock (the fallback when a stamp cannot be compared).
import { readFileSync } from 'node:fs'

/** The machine's monotonic clock in ms (CLOCK_MONOTONIC on Linux: shared by every process of one boot). */
function machineClock(): number {
  return Number(process.hrtime.bigint() / 1_000_000n)
}

let boot: string | undefined

/** This boot of the machine ('' where the OS does not say): a stamp from another boot belongs to a dead process. */
function bootId(): string {
  if (boot === undefined) {
    try {
      boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
    } catch {
      boot = ''
    }
  }
  return boot
}

/** The lease columns of one session row. */
export interface LeaseColumns {
  readonly lease_holder: string | null
  readonly lease_token: number
  /** The holder's wall-clock expiry: shown by older readers, never judged. */
  readonly lease_expires_at: number
  /** Grows at every renewal and commit. Absent (undefined) in a file no store of this version has opened for writing. */
  readonly lease_beat?: number
  /** The holder's lease length; 0 in rows written before lease stamps existed. */
  readonly lease_ms?: number
  /** machineClock() at the last beat. */
  readonly lease_clock?: number
  readonly lease_boot?: string | null
}

/** The stamp a holder writes with every beat. */
export function stamp(): { clock: number; boot: string } {
  return { clock: machineClock(), boot: bootId() }
}

/** What a reader saw of a lease and when, on its own clock. */
interface Sighting {
  readonly token: number
  readonly beat: number
  readonly at: number
}

/** One store's judgement of its file's leases; remembers the beats it saw so a standing beat counts as silence. */
export class LeaseWatch {
  readonly #seen = new Map<string, Sighting>()

  /** How long the lease of session `id` stays live, ms (0: nobody drives it). */
  remaining(id: string, row: LeaseColumns): number {
    if (row.lease_holder === null) return 0
    const leaseMs = row.lease_ms ?? 0
    // a row stamped before lease stamps existed: only its wall-clock expiry says anything
    if (leaseMs <= 0 || row.lease_beat === undefined || row.lease_clock === undefined) return Math.max(0, row.lease_expires_at - Date.now())
    const now = machineClock()
    const token = Number(row.lease_token)
    const beat = row.lease_beat
    let seen = this.#seen.get(id)
    if (!seen || seen.token !== token || seen.beat !== beat) {
      seen = { token, beat, at: now }
      this.#seen.set(id, seen)
    }
    const silence = leaseMs - (now - seen.at)
    if (silence <= 0) return 0
    const theirs = row.lease_boot ?? ''
    const ours = bootId()
    if (theirs !== '' && ours !== '' && theirs !== ours) return 0
    const elapsed = now - row.lease_clock
    if (elapsed >= 0) return Math.max(0, Math.min(silence, leaseMs - elapsed))
    // a stamp ahead of this clock: another boot (where the OS names no boot), else a clock that is not ours
    if (ours === '' && -elapsed > leaseMs) return 0
    return silence
  }
}
