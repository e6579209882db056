// The globals the driver uses that every runtime it runs in has (browsers, Node 20+, workerd),
// declared here rather than through the DOM or Node libraries, which would let an API only
// one of them has through the check.
declare function setTimeout(callback: () => void, ms?: number): unknown;
declare function clearTimeout(handle: unknown): void;
declare class TextDecoder {
  constructor(label?: string, options?: { fatal?: boolean });
  decode(input?: Uint8Array): string;
}
declare class TextEncoder {
  encode(input?: string): Uint8Array;
}
