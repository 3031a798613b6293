// The chat page: useChat against agentchart's chat endpoint. A message sent
// while the agent works steers the running turn; Stop asks the server to end
// the turn; a reload loads the chat from the log and re-attaches to the turn.
import { useChat } from '@ai-sdk/react'
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from 'ai'
import { useEffect, useState, type FormEvent } from 'react'
import { createRoot } from 'react-dom/client'

const API = '/api/chat'

/** The chat id: from the address (?chat=...), else a new one put there, so a reload finds the same chat. */
function chatId(): string {
  const url = new URL(location.href)
  let id = url.searchParams.get('chat')
  if (!id) {
    id = crypto.randomUUID()
    url.searchParams.set('chat', id)
    history.replaceState(null, '', url)
  }
  return id
}

type ToolPart = { type: string; toolCallId: string; state: string; input?: unknown; output?: unknown; errorText?: string; approval?: { id: string } }
type Answer = (id: string, approved: boolean) => void

function Tool({ part, answer }: { part: ToolPart; answer: Answer }) {
  const name = part.type === 'dynamic-tool' ? (part as { toolName?: string }).toolName : part.type.slice('tool-'.length)
  return (
    <div className="tool" data-testid="tool" data-tool={name} data-state={part.state}>
      <code>
        {name}({part.input === undefined ? '…' : JSON.stringify(part.input)})
      </code>{' '}
      <span className="state">{part.state}</span>
      {part.state === 'approval-requested' && part.approval && (
        <span>
          {' '}
          <button onClick={() => answer(part.approval!.id, true)}>Approve</button> <button onClick={() => answer(part.approval!.id, false)}>Deny</button>
        </span>
      )}
      {part.state === 'output-available' && <pre>{String(part.output)}</pre>}
      {part.state === 'output-error' && <pre className="error">{part.errorText}</pre>}
    </div>
  )
}

function Message({ message, answer }: { message: UIMessage; answer: Answer }) {
  return (
    <div className="message" data-testid="message" data-role={message.role}>
      {message.parts.map((part, i) => {
        if (part.type === 'text')
          return (
            <p key={i} className="text">
              {part.text}
            </p>
          )
        if (part.type === 'reasoning')
          return (
            <p key={i} className="reasoning">
              {part.text}
            </p>
          )
        if (part.type === 'data-turn') {
          const data = part.data as { turn: number; status: string }
          return (
            <div key={i} className="turn" data-testid="turn" data-status={data.status}>
              turn {data.turn} · {data.status}
            </div>
          )
        }
        if (part.type.startsWith('tool-') || part.type === 'dynamic-tool') return <Tool key={i} part={part as ToolPart} answer={answer} />
        return null
      })}
    </div>
  )
}

function Chat({ id, initial }: { id: string; initial: UIMessage[] }) {
  const { messages, setMessages, sendMessage, status, error, addToolApprovalResponse, resumeStream } = useChat({
    id,
    messages: initial,
    transport: new DefaultChatTransport({ api: API }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  })
  const [input, setInput] = useState('')
  const [queue, setQueue] = useState(false)
  // re-attach to a running turn (GET /api/chat/{id}/stream) before taking input, so a send never races the resume
  const [attached, setAttached] = useState(false)
  useEffect(() => {
    void resumeStream().finally(() => setAttached(true))
  }, [resumeStream])
  // a resume that found a running turn is attached as soon as its stream starts
  if (!attached && status !== 'ready') setAttached(true)
  const busy = status === 'submitted' || status === 'streaming'
  // the server's turn also runs while a call waits for an answer (the response has ended, the turn has not)
  const lastTurn = messages
    .flatMap((m) => m.parts)
    .filter((p) => p.type === 'data-turn')
    .map((p) => (p as { data: { status: string } }).data.status)
    .at(-1)
  const turnRuns = busy || lastTurn === 'awaiting-approval'
  const submit = (event: FormEvent) => {
    event.preventDefault()
    if (input.trim() === '') return
    // while a turn runs the endpoint steers it; "queue" asks for a turn of its own instead
    void sendMessage({ text: input }, queue ? { body: { mode: 'followup' } } : undefined)
    setInput('')
  }
  // Stop ends the server's turn (the partial answer stays); an open stream then ends by itself, and with none open
  // (a call waiting for an answer) the page reads the chat again from the log
  const stop = async () => {
    const streaming = busy
    await fetch(`${API}/${encodeURIComponent(id)}/stop`, { method: 'POST' })
    if (!streaming) setMessages((await (await fetch(`${API}/${encodeURIComponent(id)}/messages`)).json()) as UIMessage[])
  }
  const answer: Answer = (approvalId, approved) => void addToolApprovalResponse({ id: approvalId, approved })
  return (
    <>
      <header>
        <strong>agentchart chat</strong>
        <span>
          chat <code>{id.slice(0, 8)}</code>
        </span>
        <span className="spacer" />
        <a href={`/viewer/${encodeURIComponent(id)}`} target="_blank" rel="noreferrer" data-testid="viewer-link">
          Open the viewer
        </a>
        <a href="/">New chat</a>
      </header>
      <main data-testid="messages" data-status={status} data-attached={attached}>
        {messages.map((m) => (
          <Message key={m.id} message={m} answer={answer} />
        ))}
        {error && <p className="error">{error.message}</p>}
      </main>
      <form onSubmit={submit}>
        <input
          type="text"
          value={input}
          disabled={!attached}
          onChange={(e) => setInput(e.target.value)}
          placeholder={busy ? 'Steer the running turn…' : 'Ask about the files…'}
          data-testid="input"
        />
        <label>
          <input type="checkbox" checked={queue} onChange={(e) => setQueue(e.target.checked)} /> queue as next turn
        </label>
        <button type="submit" data-testid="send">
          {busy ? 'Steer' : 'Send'}
        </button>
        <button type="button" onClick={() => void stop()} disabled={!turnRuns} data-testid="stop">
          Stop
        </button>
      </form>
    </>
  )
}

const id = chatId()
// the chat so far, from the log; a running turn's answer comes back through useChat's resume
const initial = (await (await fetch(`${API}/${encodeURIComponent(id)}/messages`)).json()) as UIMessage[]
createRoot(document.getElementById('root')!).render(<Chat id={id} initial={initial} />)
