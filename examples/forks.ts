// Try another answer from an earlier point: fork the session at a turn
// boundary and continue both sessions independently.
import { createAgent, forkSession, type SessionEvent } from '../src/index.js'
import { scriptedModel, textResponse } from '../src/testing/index.js'

export async function forksExample(): Promise<{ parent: SessionEvent[]; fork: SessionEvent[] }> {
  const parent = createAgent({ id: 'trip', model: scriptedModel([textResponse('Lisbon.'), textResponse('Take the tram.')]) })
  await parent.run('Where should I go in May?')
  await parent.run('How do I get around?')

  // the boundary: the end of turn 1, before the second question
  const upTo = parent.session.events.find((e) => e.type === 'turn/end')!.seq
  const fork = forkSession(parent.session, { upTo, id: 'trip-by-bike' })
  const child = createAgent({ model: scriptedModel([textResponse('Rent a bike along the river.')]), session: fork })
  await child.run('And by bike?')
  return { parent: [...parent.session.events], fork: [...child.session.events] }
}
