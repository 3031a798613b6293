// Building and checking the messages users hand to the inbox.
import { randomUUID } from 'node:crypto'
import { InboxError } from './errors.js'
import { deepFreeze, toFrozenJson } from './session/lossless.js'
import { UserMessageSchema, type ContentBlock, type UserMessage } from './session/schemas.js'

export type UserSource = UserMessage['source']

/** A deep-frozen user message from text or content blocks; `id` defaults to a fresh UUID. */
export function userMessage(textOrBlocks: string | readonly ContentBlock[], options: { id?: string; source?: UserSource } = {}): UserMessage {
  const content = typeof textOrBlocks === 'string' ? [{ type: 'text' as const, text: textOrBlocks }] : [...textOrBlocks]
  return toInboxMessage({ id: options.id ?? randomUUID(), role: 'user', content, source: options.source ?? { kind: 'user' } })
}

/** Check a message at the inbox boundary (IN-7) and freeze it in place (IN-8); strings become text messages. */
export function toInboxMessage(input: unknown): UserMessage {
  if (typeof input === 'string') return userMessage(input)
  toFrozenJson(input, 'message') // throws LosslessJsonError naming the path
  const parsed = UserMessageSchema.safeParse(input)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const path = ['message', ...issue.path].join('.')
    throw new InboxError('INVALID_MESSAGE', `not a user message at ${path}: ${issue.message}`, { path })
  }
  return deepFreeze(input as UserMessage)
}
