// Building the page's DOM: elements get their text through textContent and
// their attributes through setAttribute, never through HTML parsing, so a
// string from the log can never become markup.

type Attrs = Record<string, string | number | undefined>

/** An HTML element with attributes and text or children; `text` is set as textContent. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Array<Node | string>): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag)
  setAttrs(node, attrs)
  for (const child of children) node.append(typeof child === 'string' ? document.createTextNode(child) : child)
  return node
}

const SVG = 'http://www.w3.org/2000/svg'

/** An SVG element; text children become text nodes. */
export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Array<Node | string>): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag)
  setAttrs(node, attrs)
  for (const child of children) node.append(typeof child === 'string' ? document.createTextNode(child) : child)
  return node
}

function setAttrs(node: Element, attrs: Attrs): void {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined) continue
    // event handler attributes are never set from here: listeners are added with addEventListener
    if (/^on/i.test(name)) throw new Error(`refusing to set the event attribute ${name}`)
    node.setAttribute(name, String(value))
  }
}

/** Replace an element's children. */
export function replaceChildren(node: Element, ...children: Node[]): void {
  node.replaceChildren(...children)
}

/** Run `fn` at most once per animation frame, however often it is asked for. */
export function frameScheduler(fn: () => void): () => void {
  let pending = false
  return () => {
    if (pending) return
    pending = true
    requestAnimationFrame(() => {
      pending = false
      fn()
    })
  }
}
