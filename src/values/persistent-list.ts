// An immutable list that shares structure between versions: a 32-way trie of
// full leaves plus a tail. A version never changes, so a request can hold one
// forever while the history goes on; a push costs O(1) amortised, a set O(log32 n).

const BITS = 5
const WIDTH = 1 << BITS
const MASK = WIDTH - 1

/** A trie node: a leaf holds items, a branch holds nodes; neither is ever written once a version can see it. */
type Node = unknown[]

/** What an array view reads: a length and the item at an index in [0, length). */
export interface ReadList<T> {
  readonly length: number
  at(index: number): T
  /** Every item in order, into a new array, where the list can do it faster than one `at` per item. */
  toArray?(): T[]
}

export class PersistentList<T> implements ReadList<T> {
  static readonly #empty = new PersistentList<never>(0, BITS, [], [], 0)

  static empty<T>(): PersistentList<T> {
    return PersistentList.#empty
  }

  /** A list of `items` in order, built in O(n). */
  static from<T>(items: Iterable<T>): PersistentList<T> {
    let list = PersistentList.empty<T>()
    for (const item of items) list = list.push(item)
    return list
  }

  /**
   * `tail` may be longer than this version sees: versions pushed on the same tail append to it in place, and each
   * reads only its own `length - tailStart` items of it. A full tail moves into the trie as it is and is never written again.
   */
  private constructor(
    readonly length: number,
    private readonly shift: number,
    private readonly root: Node,
    private readonly tail: T[],
    private readonly tailStart: number,
  ) {}

  /** The item at `index`; undefined outside [0, length). */
  at(index: number): T {
    if (!(index >= 0 && index < this.length)) return undefined as T
    return this.#leafAt(index)[index & MASK] as T
  }

  push(item: T): PersistentList<T> {
    const seen = this.length - this.tailStart
    if (seen < WIDTH) {
      // the tail is ours to extend when no other version pushed on it past our length (the shared empty one never is)
      const tail = this.tail.length === seen && seen > 0 ? this.tail : this.tail.slice(0, seen)
      tail.push(item)
      return new PersistentList(this.length + 1, this.shift, this.root, tail, this.tailStart)
    }
    let root: Node
    let shift = this.shift
    if (this.length >>> BITS > 1 << this.shift) {
      root = [this.root, newPath(this.shift, this.tail)]
      shift += BITS
    } else root = this.#pushTail(this.shift, this.root)
    return new PersistentList(this.length + 1, shift, root, [item], this.length)
  }

  /** This list with `item` at `index` (0 <= index < length); only the path to it is copied. */
  set(index: number, item: T): PersistentList<T> {
    if (!(index >= 0 && index < this.length)) throw new RangeError(`index ${index} is outside the list (length ${this.length})`)
    if (index >= this.tailStart) {
      const tail = this.tail.slice(0, this.length - this.tailStart)
      tail[index - this.tailStart] = item
      return new PersistentList(this.length, this.shift, this.root, tail, this.tailStart)
    }
    return new PersistentList(this.length, this.shift, assoc(this.shift, this.root, index, item), this.tail, this.tailStart)
  }

  /**
   * This list with `deleteCount` items from `start` replaced by `inserted`. One item for one is a `set`; otherwise
   * the result is rebuilt from the items it keeps, so dropping a prefix (compaction) costs the length of what is left.
   */
  splice(start: number, deleteCount: number, inserted: readonly T[]): PersistentList<T> {
    if (deleteCount === 1 && inserted.length === 1) return this.set(start, inserted[0])
    let list = PersistentList.empty<T>()
    for (let i = 0; i < start; i++) list = list.push(this.at(i))
    for (const item of inserted) list = list.push(item)
    for (let i = start + deleteCount; i < this.length; i++) list = list.push(this.at(i))
    return list
  }

  /** The leaf that holds `index` (the tail starts at a multiple of WIDTH, so `index & MASK` is its place in either). */
  #leafAt(index: number): Node {
    if (index >= this.tailStart) return this.tail
    let node = this.root
    for (let level = this.shift; level > 0; level -= BITS) node = node[(index >>> level) & MASK] as Node
    return node
  }

  /** The root with this version's full tail added as the next leaf; `length` is the count before the push. */
  #pushTail(level: number, parent: Node): Node {
    const at = ((this.length - 1) >>> level) & MASK
    const copy = parent.slice()
    if (level === BITS) copy[at] = this.tail
    else {
      const child = parent[at] as Node | undefined
      copy[at] = child === undefined ? newPath(level - BITS, this.tail) : this.#pushTail(level - BITS, child)
    }
    return copy
  }

  /** Every item in order, into a new array. */
  toArray(): T[] {
    const out = new Array<T>(this.length)
    for (let start = 0; start < this.length; start += WIDTH) {
      const leaf = this.#leafAt(start)
      const end = Math.min(WIDTH, this.length - start)
      for (let i = 0; i < end; i++) out[start + i] = leaf[i] as T
    }
    return out
  }
}

function newPath(level: number, leaf: Node): Node {
  return level === 0 ? leaf : [newPath(level - BITS, leaf)]
}

function assoc(level: number, node: Node, index: number, item: unknown): Node {
  const copy = node.slice()
  if (level === 0) copy[index & MASK] = item
  else {
    const at = (index >>> level) & MASK
    copy[at] = assoc(level - BITS, node[at] as Node, index, item)
  }
  return copy
}
