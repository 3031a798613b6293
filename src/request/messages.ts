// Building and checking the messages users hand to the inbox.
import { randomUUID } from 'node:crypto'
import { InboxError } from '../errors.js'
import { describeValue, isArrayLike } from '../values/foreign.js'
import { deepFreeze, toLoggedJson } from '../session/lossless.js'
import { InboxMessageSchema, type ContentBlock, type UserMessage } from '../session/schemas.js'

export type UserSource = UserMessage['source']

/** The default source, one frozen value every message shares (the log keeps it once, not once a message). */
const USER_SOURCE: UserSource = Object.freeze({ kind: 'user' as const })

/** A deep-frozen user message from text or content blocks; `id` defaults to a fresh UUID. */
export function userMessage(textOrBlocks: string | readonly ContentBlock[], options: { id?: string; source?: UserSource } = {}): UserMessage {
  // anything but a text or an array is refused by name (house rule: typed errors)
  if (typeof textOrBlocks !== 'string' && !isArrayLike(textOrBlocks)) {
    throw new InboxError(
      'INVALID_MESSAGE',
      `not a user message at message.content: expected a text or an array of content blocks, got ${describeValue(textOrBlocks)}`,
      { path: 'message.content' },
    )
  }
  if (typeof options !== 'object' || options === null) {
    throw new InboxError('INVALID_MESSAGE', `userMessage options must be an object ({ id?, source? }), got ${describeValue(options)}`, { path: 'options' })
  }
  const content = typeof textOrBlocks === 'string' ? [{ type: 'text' as const, text: textOrBlocks }] : [...textOrBlocks]
  const { id, source } = options
  const message = { id: id ?? randomUUID(), role: 'user' as const, content, source: source ?? USER_SOURCE }
  // text with the default id and source is valid by construction (any string is a text block's text and lossless
  // JSON): frozen here, it is checked once, where it enters an inbox; every other form is checked now
  if (typeof textOrBlocks === 'string' && id === undefined && source === undefined) return deepFreeze(message)
  return toInboxMessage(message)
}

/** Check a message at the inbox boundary (IN-7) and freeze it in place (IN-8); strings become text messages. */
export function toInboxMessage(input: unknown): UserMessage {
  if (typeof input === 'string') return userMessage(input)
  // what is checked and logged is read once: a frozen lossless message is kept, anything else (getters, a proxy) copied
  const message = toLoggedJson(input, 'message') // throws LosslessJsonError naming the path
  const parsed = InboxMessageSchema.safeParse(message)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const path = ['message', ...issue.path].join('.')
    throw new InboxError('INVALID_MESSAGE', `not a user message at ${path}: ${issue.message}`, { path })
  }
  // IN-8: the sender's own object is frozen too, so changing it afterwards throws
  if (message !== input) deepFreeze(input)
  return message as UserMessage
}
