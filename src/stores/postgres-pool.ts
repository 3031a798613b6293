// The parts of pg's Pool and client that the PostgreSQL store, its mailbox and its queue use.
/** The part of a `pg` client the store uses. */
export interface PgQueryable {
  query(text: string | { name: string; text: string }, values?: unknown[]): Promise<{ rows: any[]; rowCount: number | null }>
}

/** The part of a `pg.Pool` the store uses: bring your own to share connections with the rest of the app. */
export interface PgPoolLike extends PgQueryable {
  connect(): Promise<PgQueryable & { release(error?: Error | boolean): void }>
  end?(): Promise<void>
}
