// Canonical JSON: one serialisation per value whatever the order its keys were
// written in, so equal headers, route records and schemas compare as equal strings.

/** Sort object keys so equal headers and route records serialize equally. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, (v as Record<string, unknown>)[k]]),
        )
      : v,
  )
}
