// `--log <file.jsonl>`: the session kept as JSON lines, one event a line,
// written as each event is appended. Running again with the same file seeds a
// session from it (createSession({ seed })), so the conversation continues; a
// run that died mid-turn is repaired by the agent when it resumes.
import { appendFileSync, closeSync, existsSync, fsyncSync, openSync, readFileSync, rmSync, truncateSync, writeFileSync, writeSync } from 'node:fs'
import { basename, extname } from 'node:path'
import { createSession, type Session, type SessionEvent } from '../../index.js'
import { parseSessionLog } from '../replay.js'

/** A session over a JSONL file, and the writer that keeps the file in step with it. */
export interface LoggedSession {
  readonly session: Session
  /** Events in the file when it was opened (0 for a new file). */
  readonly stored: number
  /** Start writing every event not yet in the file; call once the session is ready. */
  follow(): void
  /** Stop writing and close the file. */
  close(): void
}

/** A log file that could not be used, with the reason in one line. */
export class LogFileError extends Error {
  override readonly name = 'LogFileError'
}

/**
 * Open (or create) a JSONL session log. Why: a demo that survives a restart needs no
 * database; the file is the session, valid for `agentchart replay` at every moment.
 */
export function openLogFile(file: string): LoggedSession {
  const releaseLock = lock(file)
  let seed: unknown[] = []
  try {
    if (existsSync(file)) seed = readLog(file)
  } catch (error) {
    releaseLock()
    throw error
  }
  let session: Session
  try {
    // one file, one session: its id follows the file name, so every run over it agrees
    session = createSession({ id: basename(file, extname(file)) || 'demo', ...(seed.length ? { seed } : {}) })
  } catch (error) {
    releaseLock()
    throw new LogFileError(`${file} holds a log the session refuses: ${(error as Error).message}`)
  }
  let fd: number
  try {
    fd = openSync(file, 'a')
  } catch (error) {
    releaseLock()
    throw new LogFileError(`cannot write ${file}: ${(error as Error).message}`)
  }
  let written = seed.length
  let unsubscribe: (() => void) | null = null
  const write = (event: SessionEvent) => {
    if (event.seq < written) return
    writeSync(fd, `${JSON.stringify(event)}\n`)
    written = event.seq + 1
  }
  return {
    session,
    stored: seed.length,
    follow() {
      if (unsubscribe) return
      // the seed's closing session/end-seed (and anything else appended so far) first
      for (const event of session.events.slice(written)) write(event)
      const sub = session.events$.subscribe(write)
      unsubscribe = () => sub.unsubscribe()
    },
    close() {
      unsubscribe?.()
      unsubscribe = null
      try {
        fsyncSync(fd)
      } finally {
        closeSync(fd)
        releaseLock()
      }
    },
  }
}

/** The events of a log file; a last line cut short by a crash (no newline, not JSON) is dropped from the file. */
function readLog(file: string): unknown[] {
  let bytes: Buffer
  try {
    bytes = readFileSync(file)
  } catch (error) {
    throw new LogFileError(`cannot read ${file}: ${(error as Error).message}`)
  }
  const end = bytes.lastIndexOf(0x0a) + 1
  if (end < bytes.length) {
    const tail = bytes.subarray(end).toString('utf8')
    let whole = true
    try {
      JSON.parse(tail)
    } catch {
      whole = false
    }
    if (whole) appendFileSync(file, '\n')
    else {
      truncateSync(file, end)
      bytes = bytes.subarray(0, end)
    }
  }
  try {
    return parseSessionLog(bytes.toString('utf8'))
  } catch (error) {
    throw new LogFileError(`${file} is not a session log: ${(error as Error).message}`)
  }
}

/** Take `<file>.lock` for this process; a lock left by a process that is gone is taken over. Returns the release. */
function lock(file: string): () => void {
  const path = `${file}.lock`
  for (let tries = 0; tries < 2; tries++) {
    try {
      writeFileSync(path, String(process.pid), { flag: 'wx' })
      return () => rmSync(path, { force: true })
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'EEXIST') throw new LogFileError(`cannot lock ${file}: ${(error as Error).message}`)
      const pid = Number(readFileSync(path, 'utf8'))
      if (Number.isSafeInteger(pid) && pid > 0 && alive(pid)) throw new LogFileError(`${file} is in use by another demo (process ${pid})`)
      rmSync(path, { force: true })
    }
  }
  throw new LogFileError(`cannot lock ${file}`)
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as { code?: unknown }).code === 'EPERM'
  }
}
