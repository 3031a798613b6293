// The demo's tools: list, read and search files under one directory, and
// nothing else. Every path is resolved, followed through symlinks and checked
// to stay inside the directory; a path that leaves it is an error result the
// model can read, never an exception and never a read outside. What is read
// is opened first and checked as opened (its real path, a regular file), so a
// path swapped for a symlink between the check and the read cannot lead out,
// and it is read in chunks up to what the result can show.
import { constants, type Stats } from 'node:fs'
import { lstat, open, readdir, readlink, realpath, stat, type FileHandle } from 'node:fs/promises'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import { z } from 'zod/v4'
import { defineTool, type ToolDefinition, type ToolResultValue } from '../../index.js'

/** Limits that keep one call cheap and its result readable. */
export interface WorkspaceLimits {
  /** Characters of a file `read_file` returns at most (default 16,000). */
  readChars: number
  /** Matching lines `search` reports at most (default 60). */
  searchMatches: number
  /** Files `search` opens at most (default 3,000). */
  searchFiles: number
  /** Files larger than this are skipped by `search` (default 512 KiB). */
  searchFileBytes: number
}

export const DEFAULT_LIMITS: WorkspaceLimits = { readChars: 16_000, searchMatches: 60, searchFiles: 3_000, searchFileBytes: 512 * 1024 }

/** Matching lines `search` shows per file; the rest are counted. */
const PER_FILE = 4

/** Directories `search` never walks into: dependencies, VCS data and build output. */
export const SKIPPED_DIRS: ReadonlySet<string> = new Set(['.git', 'node_modules', 'dist', 'coverage'])

/** A path the tools refuse, with the reason the model reads. */
export class OutsideWorkspaceError extends Error {
  override readonly name = 'OutsideWorkspaceError'
  readonly code = 'OUTSIDE_WORKSPACE'
}

/** A path that is not a regular file (a FIFO, a device, a socket): reading one could block or never end. */
export class NotRegularFileError extends Error {
  override readonly name = 'NotRegularFileError'
  readonly code = 'NOT_REGULAR_FILE'
}

/** What kind of non-regular file `info` is, in the words the model reads. */
function kindOf(info: Stats): string {
  if (info.isFIFO()) return 'a FIFO (named pipe)'
  if (info.isCharacterDevice()) return 'a character device'
  if (info.isBlockDevice()) return 'a block device'
  if (info.isSocket()) return 'a socket'
  return 'not a regular file'
}

/**
 * Open flags: never block on a FIFO (O_NONBLOCK), never follow a symlink put in the last component after the
 * check (O_NOFOLLOW), never adopt a terminal (O_NOCTTY); a flag the platform lacks is left out.
 */
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0) | (constants.O_NOCTTY ?? 0)
const DIRECTORY_FLAGS = OPEN_FLAGS | (constants.O_DIRECTORY ?? 0)

/** Bytes read from a file per call: one result never needs more than a few of them. */
const CHUNK_BYTES = 64 * 1024

/** A file opened inside the workspace, checked as opened: its handle, its path, and what fstat says of it. */
export interface OpenedFile {
  readonly handle: FileHandle
  readonly path: WorkspacePath
  readonly info: Stats
}

/** A resolved path inside the workspace: its real absolute path and its path relative to the root ('.' for the root). */
export interface WorkspacePath {
  readonly absolute: string
  readonly relative: string
}

/** The directory the tools are confined to, resolved once through its own symlinks. */
export class Workspace {
  private constructor(
    readonly root: string,
    readonly limits: WorkspaceLimits,
  ) {}

  /** Open a workspace over an existing directory (its real path is the boundary). */
  static async open(dir: string, limits: Partial<WorkspaceLimits> = {}): Promise<Workspace> {
    const root = await realpath(resolve(dir))
    if (!(await stat(root)).isDirectory()) throw new Error(`${dir} is not a directory`)
    return new Workspace(root, { ...DEFAULT_LIMITS, ...limits })
  }

  #inside(absolute: string): boolean {
    const rel = relative(this.root, absolute)
    return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel))
  }

  /**
   * Resolve `path` (relative to the root, or absolute) to a real path inside the workspace.
   * Why: `..`, an absolute path or a symlink must never reach a file outside the directory.
   * Throws OutsideWorkspaceError for a path that leaves it, and the fs error (ENOENT…) for one that does not exist.
   */
  async resolve(path: string): Promise<WorkspacePath> {
    if (path.includes('\0')) throw new OutsideWorkspaceError('refused: the path contains a NUL character')
    const lexical = resolve(this.root, path === '' ? '.' : path)
    if (!this.#inside(lexical)) throw new OutsideWorkspaceError(`refused: ${JSON.stringify(path)} is outside the working directory`)
    let real: string
    try {
      real = await realpath(lexical)
    } catch (error) {
      // a missing file behind a symlink that leads outside (or a dangling link to outside) is refused
      // too, so whether something exists out there is never revealed
      if ((error as { code?: unknown }).code === 'ENOENT' && (await this.#leadsOutside(lexical))) throw this.#symlinkOut(path)
      throw error
    }
    if (!this.#inside(real)) throw this.#symlinkOut(path)
    return { absolute: real, relative: relative(this.root, real) || '.' }
  }

  /**
   * Open the regular file at `path` for reading, confined. Why: a check of the path followed by a read of the
   * path can be raced (a directory swapped for a symlink in between); the file is opened first, and then the
   * opened file itself is checked: a regular file, whose real path is inside the workspace.
   * Throws OutsideWorkspaceError, NotRegularFileError, or the fs error (ENOENT, EISDIR…).
   */
  async openFile(path: string): Promise<OpenedFile> {
    const target = await this.resolve(path)
    // refused before opening: opening some devices has effects of its own
    const before = await lstat(target.absolute)
    if (before.isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' })
    if (!before.isFile()) throw new NotRegularFileError(`${JSON.stringify(path)} is ${kindOf(before)}: only regular files are read`)
    return this.#openChecked(target.absolute, OPEN_FLAGS, path, 'file')
  }

  /** Open the directory at `absolute` (a path the caller found inside), checked as opened like openFile. */
  async openDirectory(absolute: string, path: string): Promise<OpenedFile> {
    return this.#openChecked(absolute, DIRECTORY_FLAGS, path, 'directory')
  }

  /**
   * The names in an opened directory. On Linux they are read through `/proc/self/fd`, so they are the names
   * of the directory that was checked, whatever the path names by now.
   */
  async namesIn(opened: OpenedFile): Promise<string[]> {
    try {
      return await readdir(`/proc/self/fd/${opened.handle.fd}`)
    } catch {
      return readdir(opened.path.absolute)
    }
  }

  async #openChecked(absolute: string, flags: number, path: string, kind: 'file' | 'directory'): Promise<OpenedFile> {
    let handle: FileHandle
    try {
      handle = await open(absolute, flags)
    } catch (error) {
      // the last component became a symlink after the check (O_NOFOLLOW refuses it)
      if ((error as { code?: unknown }).code === 'ELOOP') throw this.#symlinkOut(path)
      throw error
    }
    try {
      const info = await handle.stat()
      if (kind === 'file' && !info.isFile()) throw new NotRegularFileError(`${JSON.stringify(path)} is ${kindOf(info)}: only regular files are read`)
      if (kind === 'directory' && !info.isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' })
      const real = await this.#realPathOf(handle, absolute, info)
      if (real === null || !this.#inside(real)) throw this.#symlinkOut(path)
      return { handle, path: { absolute: real, relative: relative(this.root, real) || '.' }, info }
    } catch (error) {
      await handle.close()
      throw error
    }
  }

  /**
   * Where an opened file really is: what `/proc/self/fd/N` points to (Linux), else the real path of `absolute`
   * if it still names the very file that was opened (same device and inode); null when it does not.
   */
  async #realPathOf(handle: FileHandle, absolute: string, info: Stats): Promise<string | null> {
    try {
      const linked = await readlink(`/proc/self/fd/${handle.fd}`)
      if (isAbsolute(linked)) return linked
    } catch {
      // no /proc: compare identities below
    }
    const real = await realpath(absolute)
    const now = await stat(real)
    return now.dev === info.dev && now.ino === info.ino ? real : null
  }

  #symlinkOut(path: string): OutsideWorkspaceError {
    return new OutsideWorkspaceError(`refused: ${JSON.stringify(path)} goes through a symlink that leads outside the working directory`)
  }

  /** For a path that does not exist: whether its nearest existing part is, or is a link to, somewhere outside. */
  async #leadsOutside(absolute: string, depth = 0): Promise<boolean> {
    if (depth > 40) return true // a chain of links this long is refused, as the OS would (ELOOP)
    for (let p = absolute; ; p = dirname(p)) {
      let info
      try {
        info = await lstat(p)
      } catch {
        if (dirname(p) === p) return true
        continue
      }
      if (!info.isSymbolicLink()) return !this.#inside(await realpath(p))
      const target = resolve(dirname(p), await readlink(p))
      return !this.#inside(target) || (target !== p && (await this.#leadsOutside(target, depth + 1)))
    }
  }
}

/** A tool failure as the model reads it (an error result, not a thrown exception). */
function failure(error: unknown, path: string): ToolResultValue {
  if (error instanceof OutsideWorkspaceError || error instanceof NotRegularFileError)
    return { content: error.message, isError: true, meta: { code: error.code } }
  const code = (error as { code?: unknown })?.code
  if (code === 'ENOENT') return { content: `no such file or directory: ${JSON.stringify(path)}`, isError: true, meta: { code } }
  if (code === 'ENOTDIR') return { content: `not a directory: ${JSON.stringify(path)}`, isError: true, meta: { code } }
  if (code === 'EISDIR') return { content: `${JSON.stringify(path)} is a directory: use list_dir`, isError: true, meta: { code } }
  if (code === 'EACCES' || code === 'EPERM') return { content: `permission denied: ${JSON.stringify(path)}`, isError: true, meta: { code } }
  return { content: `cannot read ${JSON.stringify(path)}: ${error instanceof Error ? error.message : String(error)}`, isError: true }
}

const formatBytes = (n: number) => (n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`)

/** One line of a `list_dir` result: `dir   src/`, `file  package.json  (2.1 KiB)`, `link  docs -> (outside)`. */
async function describeEntry(ws: Workspace, dir: string, name: string): Promise<string> {
  const full = join(dir, name)
  const info = await lstat(full)
  if (info.isSymbolicLink()) {
    try {
      const target = await ws.resolve(relative(ws.root, full))
      const isDir = (await stat(target.absolute)).isDirectory()
      return `link  ${name}${isDir ? '/' : ''} -> ${target.relative}`
    } catch (error) {
      return `link  ${name} -> ${error instanceof OutsideWorkspaceError ? '(outside the working directory)' : '(broken)'}`
    }
  }
  if (info.isDirectory()) return `dir   ${name}/`
  if (info.isFile()) return `file  ${name}  (${formatBytes(info.size)})`
  return `other ${name}`
}

/** How much of a file the binary check looks at. */
const SNIFF_BYTES = 8192
const isBinary = (buffer: Buffer) => buffer.subarray(0, SNIFF_BYTES).includes(0)

/** Whether a signal has aborted; tools stop between files and between chunks when it has. */
function checkAborted(signal: AbortSignal): void {
  if (signal.aborted) throw Object.assign(new Error('aborted'), { name: 'AbortError', code: 'ABORTED' })
}

/** At most `maxBytes` of an opened file, read chunk by chunk; `complete` says whether that was all of it. */
async function readCapped(opened: OpenedFile, maxBytes: number, signal: AbortSignal): Promise<{ bytes: Buffer; complete: boolean }> {
  const chunks: Buffer[] = []
  let total = 0
  for (;;) {
    checkAborted(signal)
    const want = Math.min(CHUNK_BYTES, maxBytes - total)
    if (want <= 0) break
    const buffer = Buffer.alloc(want)
    const { bytesRead } = await opened.handle.read(buffer, 0, want, total)
    if (bytesRead === 0) return { bytes: Buffer.concat(chunks, total), complete: true }
    chunks.push(bytesRead === want ? buffer : buffer.subarray(0, bytesRead))
    total += bytesRead
  }
  // the cap is reached: one more byte says whether anything lies beyond it
  const probe = Buffer.alloc(1)
  const { bytesRead } = await opened.handle.read(probe, 0, 1, total)
  return { bytes: Buffer.concat(chunks, total), complete: bytesRead === 0 }
}

/**
 * The three tools over `ws`: `list_dir` and `read_file` run in the parallel lane, `search`
 * (a walk of the whole tree) in the exclusive lane, so a step can show both.
 * Why: the demo's agent needs real tools, and a newcomer must be able to trust them with a directory.
 */
export function workspaceTools(ws: Workspace): ToolDefinition<any>[] {
  const listDir = defineTool({
    name: 'list_dir',
    description: `List the entries of a directory inside the working directory (${ws.root}). Paths are relative to it; "." is the root.`,
    input: z.object({ path: z.string().default('.').describe('directory to list, relative to the working directory') }),
    executionMode: 'parallel',
    async execute({ path }, { signal }) {
      try {
        const resolved = await ws.resolve(path)
        checkAborted(signal)
        const opened = await ws.openDirectory(resolved.absolute, path)
        let names: string[]
        try {
          names = (await ws.namesIn(opened)).sort()
        } finally {
          await opened.handle.close()
        }
        const target = opened.path
        const lines = await Promise.all(names.map((name) => describeEntry(ws, target.absolute, name)))
        const header = `${target.relative === '.' ? '.' : `${target.relative}/`} (${names.length} entr${names.length === 1 ? 'y' : 'ies'})`
        return { content: [header, ...lines].join('\n'), meta: { entries: names.length } }
      } catch (error) {
        return failure(error, path)
      }
    },
  })

  const readFileTool = defineTool({
    name: 'read_file',
    description: `Read a text file inside the working directory (${ws.root}); long files are cut at ${ws.limits.readChars} characters unless maxChars asks for fewer.`,
    input: z.object({
      path: z.string().describe('file to read, relative to the working directory'),
      maxChars: z.number().int().positive().optional().describe('return at most this many characters'),
    }),
    executionMode: 'parallel',
    async execute({ path, maxChars }, { signal }) {
      try {
        const limit = Math.min(maxChars ?? ws.limits.readChars, ws.limits.readChars)
        const opened = await ws.openFile(path)
        let read: { bytes: Buffer; complete: boolean }
        try {
          // a character is at most 4 bytes of UTF-8: this many bytes always hold `limit` characters if the file has
          // them, and at least the 8 KiB the binary check looks at (so a short file is still counted whole)
          read = await readCapped(opened, Math.max(limit * 4 + 4, SNIFF_BYTES), signal)
        } finally {
          await opened.handle.close()
        }
        const target = opened.path
        const size = Math.max(opened.info.size, read.bytes.length)
        if (isBinary(read.bytes)) return { content: `${target.relative} is a binary file (${formatBytes(size)}); it was not read`, isError: true }
        const text = read.bytes.toString('utf8')
        if (read.complete && text.length <= limit) return { content: text, meta: { path: target.relative, chars: text.length } }
        if (read.complete) {
          return {
            content: `${text.slice(0, limit)}\n[truncated: showing ${limit} of ${text.length} characters]`,
            meta: { path: target.relative, chars: text.length, shown: limit },
          }
        }
        // the rest was never read: its length in characters is unknown, its size in bytes is not
        return {
          content: `${text.slice(0, limit)}\n[truncated: showing the first ${limit} characters of ${size} bytes]`,
          meta: { path: target.relative, bytes: size, shown: limit },
        }
      } catch (error) {
        if ((error as { name?: unknown }).name === 'AbortError') throw error
        return failure(error, path)
      }
    },
  })

  const search = defineTool({
    name: 'search',
    description:
      `Search the working directory (${ws.root}) for a word or phrase (case-insensitive, plain text): ` +
      `file paths that contain it and lines that contain it. Skips ${[...SKIPPED_DIRS].join(', ')} and binary files.`,
    input: z.object({
      query: z.string().min(1).describe('text to look for'),
      path: z.string().default('.').describe('directory to search in, relative to the working directory'),
    }),
    executionMode: 'exclusive',
    async execute({ query, path }, { signal }) {
      try {
        const start = await ws.resolve(path)
        const needle = query.toLowerCase()
        const names: string[] = []
        const lines: string[] = []
        let files = 0
        let total = 0
        let withHits = 0
        let skipped = 0
        const visit = async (dir: string, top: boolean): Promise<void> => {
          // the directory as opened and checked: a swap for a symlink cannot list what lies outside
          let opened: OpenedFile
          try {
            opened = await ws.openDirectory(dir, relative(ws.root, dir) || '.')
          } catch (error) {
            if (top) throw error
            return // a directory that changed under the walk (swapped for a link, removed) is passed over
          }
          let entries: string[]
          try {
            entries = (await ws.namesIn(opened)).sort()
          } finally {
            await opened.handle.close()
          }
          for (const name of entries) {
            checkAborted(signal)
            const full = join(dir, name)
            const rel = relative(ws.root, full)
            const info = await lstat(full)
            if (info.isSymbolicLink()) continue // never followed: a link may lead outside
            if (info.isDirectory()) {
              if (!SKIPPED_DIRS.has(name)) await visit(full, false)
              continue
            }
            if (!info.isFile()) continue
            if (rel.toLowerCase().includes(needle)) names.push(rel)
            if (files >= ws.limits.searchFiles || info.size > ws.limits.searchFileBytes) {
              skipped++
              continue
            }
            files++
            let buffer: Buffer
            try {
              const file = await ws.openFile(rel)
              try {
                buffer = (await readCapped(file, ws.limits.searchFileBytes, signal)).bytes
              } finally {
                await file.handle.close()
              }
            } catch (error) {
              // a file that changed under the walk (swapped, removed, no longer regular) is passed over
              if ((error as { name?: unknown }).name === 'AbortError') throw error
              files--
              continue
            }
            if (isBinary(buffer)) continue
            let hits = 0
            buffer
              .toString('utf8')
              .split(/\r?\n/)
              .forEach((line, i) => {
                if (!line.toLowerCase().includes(needle)) return
                hits++
                // a few lines per file, so one chatty file does not hide the others
                if (hits <= PER_FILE && lines.length < ws.limits.searchMatches) lines.push(`${rel}:${i + 1}: ${line.trim().slice(0, 200)}`)
              })
            if (hits > PER_FILE) lines.push(`${rel}: ${hits - PER_FILE} more matching line${hits - PER_FILE === 1 ? '' : 's'}`)
            if (hits > 0) withHits++
            total += hits
          }
        }
        if ((await stat(start.absolute)).isDirectory()) await visit(start.absolute, true)
        else throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' })
        const out = [`${names.length} file name${names.length === 1 ? '' : 's'} containing ${JSON.stringify(query)}:`, ...names]
        out.push(`${total} matching line${total === 1 ? '' : 's'} in ${withHits} of ${files} file${files === 1 ? '' : 's'} searched:`, ...lines)
        if (skipped > 0) out.push(`[${skipped} large file${skipped === 1 ? '' : 's'} not searched]`)
        return { content: out.join('\n'), meta: { names: names.length, lines: total, files: withHits, searched: files } }
      } catch (error) {
        if ((error as { name?: unknown }).name === 'AbortError') throw error
        return failure(error, path)
      }
    },
  })

  return [listDir, readFileTool, search]
}

// ---- reading the results back (the local model plans from them) ------------------

/** One entry of a `list_dir` result. */
export interface ListedEntry {
  readonly kind: 'dir' | 'file' | 'link' | 'other'
  readonly name: string
}

/** The entries of a `list_dir` result, in listed order (the inverse of describeEntry). */
export function parseListing(content: string): ListedEntry[] {
  const entries: ListedEntry[] = []
  for (const line of content.split('\n').slice(1)) {
    const m = /^(dir|file|link|other)\s+(.+?)(?:\/)?(?:\s{2}\(.*\)|\s->\s.*)?$/.exec(line)
    if (m) entries.push({ kind: m[1] as ListedEntry['kind'], name: m[2] })
  }
  return entries
}

/** A `search` result: the matching file paths, the lines shown (`path`, 1-based `line`, `text`), and the counts. */
export interface SearchFindings {
  readonly names: string[]
  readonly lines: Array<{ path: string; line: number; text: string }>
  /** Matching lines in all, and files holding them (more than the lines shown). */
  readonly total: number
  readonly files: number
  /** Matching lines not shown, by file. */
  readonly hidden: ReadonlyMap<string, number>
}

/** Read a `search` result back into paths, lines and counts. */
export function parseSearch(content: string): SearchFindings {
  const names: string[] = []
  const lines: SearchFindings['lines'] = []
  const hidden = new Map<string, number>()
  let total = 0
  let files = 0
  let section: 'names' | 'lines' | null = null
  for (const line of content.split('\n')) {
    const counts = /^(\d+) matching lines? in (\d+) of /.exec(line)
    if (/^\d+ file names? containing /.test(line)) section = 'names'
    else if (counts) {
      section = 'lines'
      total = Number(counts[1])
      files = Number(counts[2])
    } else if (line.startsWith('[')) section = null
    else if (section === 'names') names.push(line)
    else if (section === 'lines') {
      const m = /^(.*?):(\d+): (.*)$/.exec(line)
      const more = /^(.*): (\d+) more matching lines?$/.exec(line)
      if (m) lines.push({ path: m[1], line: Number(m[2]), text: m[3] })
      else if (more) hidden.set(more[1], Number(more[2]))
    }
  }
  return { names, lines, total, files, hidden }
}
