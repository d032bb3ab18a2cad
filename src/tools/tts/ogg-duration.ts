/**
 * The playing time of an Ogg/Opus file, in seconds: the last page's granule position (48 kHz
 * samples) less the pre-skip its OpusHead states. Undefined when the file is not one.
 */
export function oggOpusSeconds(file: Buffer): number | undefined {
  const head = file.indexOf('OpusHead');
  const lastPage = file.lastIndexOf('OggS');
  if (head < 0 || lastPage < 0 || lastPage + 14 > file.length || head + 12 > file.length) return undefined;
  const preSkip = file.readUInt16LE(head + 10);
  const granule = Number(file.readBigUInt64LE(lastPage + 6));
  return granule > preSkip ? (granule - preSkip) / 48_000 : undefined;
}
