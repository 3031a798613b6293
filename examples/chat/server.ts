// The chat example's server: the page (bundled with vite at start), the chat
// endpoint over agents stored in SQLite (a chat survives a restart), and a
// viewer per chat one click away. The model is agentchart's built-in offline
// one, so it runs with no key and no network:
//   npm run example:chat            then open the printed address
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { tmpdir } from 'node:os'
import { extname, join, normalize, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'vite'
import { createChatHandler, toNodeListener } from '../../src/chat/index.js'
import { localModel } from '../../src/cli/demo/local-model.js'
import { Workspace, workspaceTools } from '../../src/cli/demo/workspace.js'
import { createAgent, type Agent, type ModelAdapter } from '../../src/index.js'
import { sqliteStore } from '../../src/stores/index.js'
import { serveViewer, type ViewerHandle } from '../../src/viewer/index.js'
import { buildViewerPage, viewerPageStale } from '../../scripts/build-viewer.js'

const here = fileURLToPath(new URL('.', import.meta.url))
const repo = resolve(here, '../..')

export interface ChatExampleOptions {
  /** Default 0 (a free port); the CLI uses 3000. */
  port?: number
  /** Where the chats' SQLite file lives; default a folder in the system's temp directory (kept across restarts). */
  dataDir?: string
  /** The directory the agent's tools may read; default this repository. */
  dir?: string
  /** The model; default the built-in offline one, paced so a person can watch and steer it. */
  model?: ModelAdapter
  /** Ask a person before each read_file (the page shows Approve / Deny). */
  approvals?: boolean
  print?: (line: string) => void
}

export interface ChatExample {
  readonly url: string
  /** The live agents, by chat id (each opened from the store on first use). */
  agent(chatId: string): Promise<Agent>
  close(): Promise<void>
}

const TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' }
/** Chat ids become session ids and URL parts: keep them plain. */
const CHAT_ID = /^[A-Za-z0-9_-]{1,80}$/

/** Bundle the page (React, useChat) into `outDir`. */
async function buildPage(outDir: string): Promise<void> {
  await build({
    root: join(here, 'page'),
    base: '/',
    logLevel: 'warn',
    configFile: false,
    cacheDir: join(outDir, '.vite'),
    build: {
      outDir,
      emptyOutDir: true,
      target: 'es2022',
      // React's 'use client' markers mean nothing in a plain bundle
      rollupOptions: { onwarn: (warning, warn) => (warning.code === 'MODULE_LEVEL_DIRECTIVE' ? undefined : warn(warning)) },
    },
  })
}

export async function startChatExample(options: ChatExampleOptions = {}): Promise<ChatExample> {
  const print = options.print ?? ((line: string) => console.log(line))
  const dataDir = options.dataDir ?? join(tmpdir(), 'agentchart-chat-example')
  const pageDir = mkdtempSync(join(tmpdir(), 'agentchart-chat-page-'))
  await buildPage(pageDir)
  if (viewerPageStale()) buildViewerPage()
  const workspace = await Workspace.open(options.dir ?? repo)
  const tools = workspaceTools(workspace)
  const model = options.model ?? localModel({ thinkMs: 300, chunkMs: 70 })
  mkdirSync(dataDir, { recursive: true })
  const store = sqliteStore({ path: join(dataDir, 'chats.db') })

  const agents = new Map<string, Promise<Agent>>()
  const agent = (chatId: string): Promise<Agent> => {
    let found = agents.get(chatId)
    if (!found) {
      found = createAgent({
        model,
        tools,
        store,
        sessionId: chatId,
        systemPrompt: `You answer questions about the files in ${workspace.root}, reading them with your tools.`,
        ...(options.approvals ? { approvals: true } : {}),
        logger: { error: (message, error) => console.error(`chat ${chatId}: ${message}`, error) },
      }).then((a) => {
        if (options.approvals) a.on('tools/pre-execute', (call, next) => (call.name === 'read_file' ? { kind: 'ask', reason: 'read this file?' } : next()))
        return a
      })
      agents.set(chatId, found)
      found.catch(() => agents.delete(chatId))
    }
    return found
  }
  const chat = toNodeListener(createChatHandler({ agent }))

  const viewers = new Map<string, Promise<ViewerHandle>>()
  const viewerOf = (chatId: string) => {
    let found = viewers.get(chatId)
    if (!found) {
      found = agent(chatId).then((a) => serveViewer(a, { print: false, title: `chat ${chatId}` }))
      viewers.set(chatId, found)
    }
    return found
  }

  const send = (res: ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8') => {
    res.writeHead(status, { 'content-type': type })
    res.end(body)
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    const parts = url.pathname.split('/').filter(Boolean)
    if (parts[0] === 'api' && parts[1] === 'chat') {
      if (parts.length > 2 && !CHAT_ID.test(decodeURIComponent(parts[2]))) return send(res, 400, 'bad chat id')
      return chat(req, res)
    }
    if (parts[0] === 'viewer' && parts.length === 2) {
      const chatId = decodeURIComponent(parts[1])
      if (!CHAT_ID.test(chatId)) return send(res, 400, 'bad chat id')
      viewerOf(chatId).then(
        (viewer) => {
          res.writeHead(302, { location: viewer.url })
          res.end()
        },
        (error: Error) => send(res, 500, `no viewer: ${error.message}`),
      )
      return
    }
    // the page's own files; nothing a request says leaves the bundle folder
    const file = normalize(join(pageDir, url.pathname === '/' ? 'index.html' : url.pathname))
    if (!file.startsWith(pageDir + sep) || !existsSync(file) || !TYPES[extname(file)]) return send(res, 404, 'not found')
    send(res, 200, readFileSync(file, 'utf8'), TYPES[extname(file)])
  })
  await new Promise<void>((done) => server.listen(options.port ?? 0, '127.0.0.1', done))
  const address = server.address()
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`
  print(`agentchart chat example: ${url}  (chats kept in ${dataDir})`)

  return {
    url,
    agent,
    async close() {
      server.closeAllConnections()
      await new Promise<void>((done) => server.close(() => done()))
      for (const viewer of viewers.values()) await viewer.then((v) => v.close()).catch(() => {})
      for (const a of agents.values()) await a.then((x) => x.dispose({ force: true })).catch(() => {})
      await store.close()
      rmSync(pageDir, { recursive: true, force: true })
    },
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const example = await startChatExample({ port: Number(process.env.PORT ?? 3000), approvals: process.argv.includes('--approvals') })
  const stop = () => void example.close().then(() => process.exit(0))
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
}
