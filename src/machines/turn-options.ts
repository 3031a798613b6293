// Options of one turn (`agent.run(input, { request, maxSteps })`): kept with
// the queued prompt, taken by the turn that claims it, and gone when that turn
// ends, so nothing of them reaches the next turn.
import type { LlmCallConfig } from '../session/schemas.js'
import type { Draft } from './setup.js'
import type { AgentContext, InstanceContext, TurnOptions } from './types.js'
import { NO_TURN_OPTIONS } from './context.js'

/** A prompt enters next-turn: it keeps its options until a turn claims it (a send without options forgets older ones). */
export function queueTurnOptions(d: Draft, id: string, options: TurnOptions | undefined): void {
  forgetTurnOptions(d, [{ id }])
  if (options === undefined) return
  const all = d.get('turnOptions')
  d.set({ turnOptions: { ...all, queued: { ...all.queued, [id]: options } } })
}

/** Queued prompts left next-turn without a turn (discarded, replaced by another id): their options go with them. */
export function forgetTurnOptions(d: Draft, messages: readonly { id: string }[]): void {
  const all = d.get('turnOptions')
  if (!messages.some((m) => m.id in all.queued)) return
  const queued = { ...all.queued }
  for (const m of messages) delete queued[m.id]
  d.set({ turnOptions: { ...all, queued } })
}

/** The turn claimed prompt `id`: its options apply now, its request layer over the seed config. */
export function takeTurnOptions(d: Draft, id: string): void {
  const all = d.get('turnOptions')
  const options = all.queued[id]
  if (options === undefined) return
  const { [id]: _taken, ...queued } = all.queued
  const request = d.get('request')
  const layered = options.request !== undefined
  d.set({ turnOptions: { queued, current: options, baseSeed: layered ? request.seedConfig : null } })
  if (layered) d.setRequest({ seedConfig: withLayer(request.seedConfig, options.request) })
}

/** The turn ended: its options go, and the seed config is the one from before its request layer. */
export function dropTurnOptions(d: Draft): void {
  const all = d.get('turnOptions')
  if (all.current === null) return
  if (all.baseSeed !== null) d.setRequest({ seedConfig: all.baseSeed })
  d.set({ turnOptions: Object.keys(all.queued).length === 0 ? NO_TURN_OPTIONS : { queued: all.queued, current: null, baseSeed: null } })
}

/** The step limit of the running turn: its own option, else the instance's (TU-16); null: no limit. */
export function stepLimitOf(context: { instance: InstanceContext; turnOptions: AgentContext['turnOptions'] }): number | null {
  const own = context.turnOptions.current?.maxSteps
  return own !== undefined ? own : context.instance.maxSteps
}

/** The seed with a turn's request layer over it: its fields win, provider options merged one level deep. */
function withLayer(seed: LlmCallConfig, layer: NonNullable<TurnOptions['request']>): LlmCallConfig {
  const merged: LlmCallConfig = { ...seed, ...layer, provider: seed.provider, model: seed.model }
  if (seed.providerOptions !== undefined && layer.providerOptions !== undefined) {
    const providerOptions: Record<string, Record<string, unknown> | undefined> = { ...seed.providerOptions }
    for (const [provider, fields] of Object.entries(layer.providerOptions)) providerOptions[provider] = { ...(seed.providerOptions[provider] ?? {}), ...fields }
    merged.providerOptions = providerOptions
  }
  return merged
}
