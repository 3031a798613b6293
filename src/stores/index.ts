// The stores: where session logs live between processes. The drivers
// (better-sqlite3, pg) load only when their store is made. The agentchart/stores
// entry (service/index.ts) re-exports all of it.
export type { CheckpointText, Lease, OpenSessionOptions, SessionHandle, SessionInfo, SessionStore } from './types.js'
export type { StoredCheckpoint } from './checkpoint.js'
export { memoryStore } from './memory.js'
export type { MemoryStoreOptions } from './memory.js'
export type { ChunkRetention } from './fold.js'
export { sqliteStore } from './sqlite.js'
export type { SqliteStoreOptions } from './sqlite.js'
export { postgresStore } from './postgres.js'
export type { PostgresStoreOptions } from './postgres.js'
export type { PgPoolLike, PgQueryable } from './postgres-pool.js'
export { SessionWriter } from './writer.js'
export type { WriterOptions, Durability } from './writer.js'
export { DEFAULT_LEASE_MS, defaultHolder } from './lease.js'
export { SessionInUseError, StoredLogError, StoreError } from '../errors.js'
export { MailboxError } from './mailbox.js'
