// A frozen array that reads a ReadList instead of holding a copy of it. It is
// an array to every reader (Array.isArray, length, indexes, iteration, every
// Array.prototype method, JSON.stringify, util.inspect) and refuses writes
// like a frozen array. Reflection (Object.keys, descriptors, isFrozen) copies
// the items into the array once, because a proxy may only report a frozen
// array's own properties when its target holds them.
import type { ReadList } from './persistent-list.js'

const INSPECT = Symbol.for('nodejs.util.inspect.custom')

class FrozenListHandler<T> implements ProxyHandler<T[]> {
  #filled = false

  constructor(readonly list: ReadList<T>) {}

  /** Copies the items into the target and freezes it: from then on every trap reads the real frozen array. */
  fill(target: T[]): T[] {
    if (this.#filled) return target
    this.#filled = true
    delete (target as unknown as Record<symbol, unknown>)[INSPECT]
    const { list } = this
    const items = list.toArray?.()
    for (let i = 0; i < list.length; i++) target.push(items === undefined ? list.at(i) : items[i])
    Object.freeze(target)
    return target
  }

  get(target: T[], key: string | symbol, receiver: unknown): unknown {
    if (typeof key === 'string' && !this.#filled) {
      if (key === 'length') return this.list.length
      const index = arrayIndex(key)
      if (index >= 0) return index < this.list.length ? this.list.at(index) : undefined
    }
    if (key === Symbol.iterator || key === 'values') return this.#filled ? Reflect.get(target, key, receiver) : this.values
    if (key === 'slice' && !this.#filled) return this.slice
    const method: unknown = Reflect.get(Array.prototype, key)
    // a whole-array method (map, filter, slice...) runs on the filled array itself: one copy, then no trap per item
    if (typeof method === 'function' && key !== 'constructor')
      return (...args: unknown[]): unknown => (method as (...a: unknown[]) => unknown).apply(this.fill(target), args)
    return this.#filled ? Reflect.get(target, key, receiver) : Reflect.get(Array.prototype, key, receiver)
  }

  /** Iteration straight over the list (spread, for...of), not through an index lookup per item. */
  readonly values = (): IterableIterator<T> => {
    const { list } = this
    const length = list.length
    let index = 0
    return {
      next: () => (index < length ? { value: list.at(index++), done: false } : { value: undefined, done: true }),
      [Symbol.iterator]() {
        return this
      },
    }
  }

  /** A slice reads only its own range (the newest events of a long log, the last messages of a history). */
  readonly slice = (start?: number, end?: number): T[] => {
    const { list } = this
    const length = list.length
    const clamp = (at: number | undefined, fallback: number) => {
      const n = at === undefined ? fallback : Math.trunc(Number(at)) || 0
      return n < 0 ? Math.max(length + n, 0) : Math.min(n, length)
    }
    const from = clamp(start, 0)
    const to = clamp(end, length)
    const out: T[] = []
    for (let i = from; i < to; i++) out.push(list.at(i))
    return out
  }

  has(target: T[], key: string | symbol): boolean {
    if (!this.#filled && typeof key === 'string') {
      const index = arrayIndex(key)
      if (index >= 0) return index < this.list.length
    }
    return Reflect.has(target, key)
  }

  /** Throws even in sloppy mode: a write to the history is a bug wherever it is written. */
  set(_target: T[], key: string | symbol): boolean {
    throw new TypeError(`Cannot assign to read only property '${String(key)}' of a frozen array`)
  }

  defineProperty(target: T[], key: string | symbol, descriptor: PropertyDescriptor): boolean {
    return Reflect.defineProperty(this.fill(target), key, descriptor)
  }

  deleteProperty(target: T[], key: string | symbol): boolean {
    return Reflect.deleteProperty(this.fill(target), key)
  }

  getOwnPropertyDescriptor(target: T[], key: string | symbol): PropertyDescriptor | undefined {
    return Reflect.getOwnPropertyDescriptor(this.fill(target), key)
  }

  ownKeys(target: T[]): (string | symbol)[] {
    return Reflect.ownKeys(this.fill(target))
  }

  isExtensible(target: T[]): boolean {
    return Reflect.isExtensible(this.fill(target))
  }

  preventExtensions(target: T[]): boolean {
    return Reflect.preventExtensions(this.fill(target))
  }

  setPrototypeOf(target: T[], proto: object | null): boolean {
    return Reflect.setPrototypeOf(this.fill(target), proto)
  }
}

/** A frozen array of the items of `list`, as `list` is now (the list must never change). O(1) until reflected upon. */
export function frozenArrayOf<T>(list: ReadList<T>): readonly T[] {
  const handler = new FrozenListHandler(list)
  const target: T[] = []
  // util.inspect shows a proxy's target without running its traps: this fills the target first
  Object.defineProperty(target, INSPECT, {
    configurable: true,
    value(this: unknown, _depth: number, options: object, inspect: (value: unknown, options: object) => string) {
      return inspect(handler.fill(target), options)
    },
  })
  return new Proxy(target, handler)
}

/** The array index a property key names (a canonical integer below 2^32 - 1), or -1. */
function arrayIndex(key: string): number {
  const length = key.length
  if (length === 0 || length > 10) return -1
  const first = key.charCodeAt(0)
  if (first < 48 || first > 57 || (first === 48 && length > 1)) return -1
  let value = first - 48
  for (let i = 1; i < length; i++) {
    const digit = key.charCodeAt(i) - 48
    if (digit < 0 || digit > 9) return -1
    value = value * 10 + digit
  }
  return value < 4294967295 ? value : -1
}
