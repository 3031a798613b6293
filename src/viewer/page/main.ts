// The viewer page: connects to its server's live channel (Server-Sent Events,
// with the token from the page's own URL), feeds the session model, and keeps
// the statechart, the timeline, the log and the details in step. Selecting an
// event anywhere selects it everywhere; in a live session the statechart can
// also show the configuration the machine was in when that event was appended.
import type { Configuration, ServerMessage, TransitionMark } from './protocol.js'
import { el } from './dom.js'
import { LogView } from './log.js'
import { SessionModel } from './model.js'
import { eventLabel, StatechartView } from './statechart.js'
import { TimelineView } from './timeline.js'

const MAX_MARKS = 500

const body = document.body
const token = new URLSearchParams(location.search).get('token')

let model = new SessionModel()
const configs = new Map<number, Configuration>()
const marks: TransitionMark[] = []
let liveConfig: number | null = null
/** The event whose configuration the statechart shows instead of the live one. */
let pinned: number | null = null
let mode: 'live' | 'session' | 'stored' | null = null
let ended = false

// ---- layout ---------------------------------------------------------------

const titleEl = el('span', { class: 'title' }, 'agentchart viewer')
const modeEl = el('span', { class: 'badge mode' }, '…')
const statusEl = el('span', { class: 'badge status' }, '')
const connEl = el('span', { class: 'badge conn' }, 'connecting')
const countEl = el('span', { class: 'badge count' }, '0 events')
body.append(el('header', {}, titleEl, modeEl, statusEl, countEl, connEl))

const chartRoot = el('div', { class: 'chart-body' })
const pinNote = el('span', { class: 'pin-note' })
const liveButton = el('button', { type: 'button', class: 'to-live', hidden: '' }, 'back to live')
liveButton.addEventListener('click', () => {
  pinned = null
  renderChart()
})
const allEdges = el('input', { type: 'checkbox' })
const chart = new StatechartView(chartRoot)
allEdges.addEventListener('change', () => (chart.showAll = allEdges.checked))
const chartPanel = el(
  'section',
  { class: 'panel chart', id: 'statechart' },
  el('div', { class: 'toolbar' }, el('strong', {}, 'Statechart'), pinNote, liveButton, el('label', {}, allEdges, ' all transitions')),
  chartRoot,
)

const transitionsList = el('ol', { class: 'transitions', reversed: '' })
const details = el('pre', { class: 'details' }, 'Select an event in the log or on the timeline.')
const detailsHead = el('div', { class: 'toolbar' }, el('strong', {}, 'Event'))
const side = el(
  'section',
  { class: 'panel side' },
  el('div', { class: 'toolbar' }, el('strong', {}, 'Recent transitions')),
  transitionsList,
  detailsHead,
  details,
)

const timelineRoot = el('section', { class: 'panel timeline', id: 'timeline' })
const logRoot = el('section', { class: 'panel log', id: 'log' })
body.append(el('main', {}, el('div', { class: 'top' }, chartPanel, side), timelineRoot, logRoot))

const timeline = new TimelineView(timelineRoot, model, (seq) => select(seq))
const log = new LogView(logRoot, model, (seq) => select(seq))

// ---- selection -------------------------------------------------------------

function select(seq: number): void {
  const event = model.events[seq]
  if (!event) return
  body.dataset.selected = String(seq)
  log.select(seq)
  timeline.select(seq, model.owner[seq] ?? 0)
  const text = JSON.stringify(event, null, 2)
  details.textContent = text.length > 200_000 ? `${text.slice(0, 200_000)}\n… (${text.length} characters)` : text
  if (model.eventConfigs[seq] !== undefined) pinned = seq
  renderChart()
}

function renderChart(): void {
  const configId = pinned !== null ? model.eventConfigs[pinned] : liveConfig
  const config = configId === undefined || configId === null ? undefined : configs.get(configId)
  const trail = pinned !== null ? marks.filter((m) => m.seq <= pinned! + 1).slice(-5) : marks.slice(-5)
  chart.show(config?.actors ?? [], trail)
  body.dataset.config = configId === null || configId === undefined ? '' : String(configId)
  liveButton.hidden = pinned === null
  pinNote.textContent =
    pinned !== null ? `as when #${pinned} was appended` : mode === 'live' ? (ended ? 'final state' : 'live') : 'no running agent: definitions only'
}

function renderTransitions(): void {
  const items = marks.slice(-12).reverse()
  transitionsList.replaceChildren(
    ...items.map((m) => {
      const to = m.targets.length > 0 ? ` → ${m.targets.map((t) => t || '(root)').join(', ')}` : ' (stays)'
      return el('li', { 'data-event': m.event, title: `after #${m.seq - 1}` }, el('code', {}, eventLabel(m.event)), ` ${m.source || '(root)'}${to}`)
    }),
  )
}

function renderHeader(): void {
  countEl.textContent = `${model.events.length} events`
  body.dataset.events = String(model.events.length)
}

// ---- the live channel ---------------------------------------------------------

function onMessage(message: ServerMessage): void {
  switch (message.kind) {
    case 'hello': {
      mode = message.mode
      body.dataset.mode = message.mode
      modeEl.textContent = message.mode === 'live' ? 'live agent' : message.mode === 'session' ? 'live log' : 'stored · read-only'
      titleEl.textContent = `agentchart · ${message.title}`
      document.title = `agentchart · ${message.title}`
      if (message.from === 0 && model.events.length > 0) {
        model = new SessionModel()
        timeline.setModel(model)
        log.setModel(model)
      }
      if (message.mode === 'stored' && model.events.length === 0) {
        timeline.follow = false
        log.follow = false
      }
      for (const c of message.charts) chart.addChart(c)
      renderChart()
      break
    }
    case 'chart':
      chart.addChart(message.chart)
      break
    case 'configs':
      for (const c of message.configs) configs.set(c.id, c)
      break
    case 'notes':
      model.note(message.arrivals, message.cancels)
      timeline.update()
      break
    case 'events': {
      model.append(message.events, message.configs)
      timeline.update()
      log.update()
      renderHeader()
      break
    }
    case 'state': {
      liveConfig = message.config
      statusEl.textContent = message.actor === 'active' ? message.status : `agent ${message.actor}`
      body.dataset.status = message.status
      for (const m of message.transitions) if (marks.length === 0 || m.n > marks[marks.length - 1].n) marks.push(m)
      if (marks.length > MAX_MARKS) marks.splice(0, marks.length - MAX_MARKS)
      renderTransitions()
      renderChart()
      break
    }
    case 'end':
      ended = true
      source.close()
      connEl.textContent = message.reason === 'stored session' ? 'loaded' : 'closed'
      body.dataset.connection = 'ended'
      renderChart()
      break
  }
}

const source = new EventSource(`/api/live${token ? `?token=${encodeURIComponent(token)}` : ''}`)
source.addEventListener('open', () => {
  connEl.textContent = 'connected'
  body.dataset.connection = 'open'
})
source.addEventListener('error', () => {
  if (ended) return
  connEl.textContent = source.readyState === EventSource.CLOSED ? 'refused' : 'reconnecting'
  body.dataset.connection = source.readyState === EventSource.CLOSED ? 'refused' : 'reconnecting'
})
source.addEventListener('message', (event: MessageEvent<string>) => {
  let message: ServerMessage
  try {
    message = JSON.parse(event.data) as ServerMessage
  } catch {
    return
  }
  onMessage(message)
})
