// An implementation written for some events fails to compile when a config
// attaches it to another: `attached()` names each misattachment. (`npm test`
// type-checks this file; the @ts-expect-error below fails the build if the
// misattached config ever compiles.)
import { describe, expect, expectTypeOf, it } from 'vitest'
import { createActor } from 'xstate'
import { attached, type Misattached } from '../../src/machines/attachment.js'
import { initialContext } from '../../src/machines/index.js'
import { turnSetup, type TurnImplementations } from '../../src/machines/turn.js'

const misattached = turnSetup.createStateConfig({
  initial: 'waiting',
  states: {
    // enterProposal reads a hook.done decision; failTurn reads an append.failed, so it cannot run on entry
    waiting: { entry: 'failTurn', on: { 'hook.failed': { actions: 'enterProposal', target: 'done' } } },
    done: { type: 'final' },
  },
})

describe('attaching implementations to events', () => {
  it('a misattached config fails to compile, naming each misattachment', () => {
    // @ts-expect-error: misattached: action enterProposal on hook.failed, action failTurn on any event
    attached<TurnImplementations>()(misattached)
    expectTypeOf<Misattached<TurnImplementations, typeof misattached>>().toEqualTypeOf<'action enterProposal on hook.failed' | 'action failTurn on any event'>()
  })

  it('a config attaching each implementation to its own events compiles and is returned as is', () => {
    const fine = turnSetup.createStateConfig({
      initial: 'waiting',
      states: { waiting: { on: { 'hook.done': { guard: 'isRejected', actions: 'enterProposal', target: 'done' } } }, done: { type: 'final' } },
    })
    expectTypeOf<Misattached<TurnImplementations, typeof fine>>().toEqualTypeOf<never>()
    expect(attached<TurnImplementations>()(fine)).toBe(fine)
  })

  it('at run time too, an implementation refuses an event it was not written for', () => {
    const machine = turnSetup.createMachine({ id: 'wrong', context: ({ input }) => initialContext(input), ...misattached })
    const actor = createActor(machine, { input: { seedConfig: { provider: 'p', model: 'm' } } })
    actor.subscribe({ error: () => {} })
    actor.start()
    expect(actor.getSnapshot().status).toBe('error')
    expect(String(actor.getSnapshot().error)).toMatch(/append\.failed/)
  })
})
