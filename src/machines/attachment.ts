// A compile-time check that every named implementation a state config refers
// to is attached to an event it was written for (setup.ts records that as a
// phantom type). Entry, exit, eventless and done transitions may carry only
// implementations that read no event. A misattached name fails to compile
// with a message that names it, e.g. `misattached: action acceptDecision on hook.failed`.
import type { WrittenFor } from './setup.js'

/** The named implementations of one setup, as written (their types carry the events they are for). */
export interface Implementations {
  actions: Record<string, unknown>
  guards: Record<string, unknown>
}

type ForOf<F> = F extends WrittenFor<infer T> ? T : never

/** The names an `actions` slot refers to: a name, `{ type }`, or a list of them. */
type ActionNames<A> = A extends string ? A : A extends { type: infer T } ? T : A extends readonly (infer X)[] ? ActionNames<X> : never
/** The names a `guard` slot refers to, through `and`, `or` and `not`. */
type GuardNames<G> = G extends string ? G : G extends { _out_TGuard?: infer T } ? GuardNames<T> : G extends { type: infer T } ? T : never

/** `Kind Name on E` when the implementation `Name` is written for other events than `E` (never for one that reads no event). */
type Misfit<I extends Implementations, Kind extends 'action' | 'guard', Name, E extends string> = Name extends keyof I[`${Kind}s`] & string
  ? ForOf<I[`${Kind}s`][Name]> extends infer For
    ? [For] extends [never]
      ? never
      : '*' extends For
        ? never
        : E extends For
          ? never
          : `${Kind} ${Name} on ${E}`
    : never
  : never

type TransitionMisfits<I extends Implementations, E extends string, T> = T extends readonly (infer X)[]
  ? TransitionMisfits<I, E, X>
  : T extends object
    ? | (T extends { actions: infer A } ? Misfit<I, 'action', ActionNames<A>, E> : never)
      | (T extends { guard: infer G } ? Misfit<I, 'guard', GuardNames<G>, E> : never)
    : never

type AnyEvent = 'any event'

/** Every misattachment in a state config and its descendants, as readable strings (never when there is none). */
export type Misattached<I extends Implementations, S> =
  | (S extends { on: infer On } ? { [E in keyof On & string]: TransitionMisfits<I, E, On[E]> }[keyof On & string] : never)
  | (S extends { entry: infer A } ? Misfit<I, 'action', ActionNames<A>, AnyEvent> : never)
  | (S extends { exit: infer A } ? Misfit<I, 'action', ActionNames<A>, AnyEvent> : never)
  | (S extends { always: infer T } ? TransitionMisfits<I, AnyEvent, T> : never)
  | (S extends { onDone: infer T } ? TransitionMisfits<I, AnyEvent, T> : never)
  | (S extends { states: infer States } ? { [K in keyof States]: Misattached<I, States[K]> }[keyof States] : never)

/**
 * Check a state config against the implementations it refers to; returns it unchanged. Usage:
 * `export const turnState = attached<TurnImplementations>()(turnSetup.createStateConfig({ … }))`.
 */
export function attached<I extends Implementations>() {
  return <S>(config: S & ([Misattached<I, S>] extends [never] ? unknown : { [K in Misattached<I, S> as `misattached: ${K}`]: true })): S => config
}
