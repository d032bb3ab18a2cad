/** A size as a person reads it: `64 MiB`, `64 KiB`, `1500 bytes` (exact, never rounded). */
export function byteSize(bytes: number): string {
  if (bytes > 0 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  return bytes > 0 && bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`;
}
