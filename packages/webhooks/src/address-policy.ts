import { type LookupAddress, lookup } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/** How long resolving a webhook host may take when an endpoint is created. */
const RESOLVE_TIMEOUT_MS = 5_000;

/** A target the address policy refuses; the message names the host and the address. */
export class RefusedTargetError extends Error {
  override name = 'RefusedTargetError';
  readonly code = 'ERR_WEBHOOK_TARGET_REFUSED';
}

/**
 * Only globally routable unicast addresses are webhook targets. ipaddr.js names every special range
 * (loopback, private, link-local with the cloud metadata address 169.254.169.254, unique-local
 * fd00::/8, carrier-grade NAT, unspecified, multicast, reserved, 6to4/NAT64 forms that embed an IPv4
 * address...) and calls only the rest `unicast`. IPv4-mapped IPv6 addresses are judged as IPv4.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'unicast';
}

function refused(host: string, address: string): RefusedTargetError {
  const where = host === address ? address : `${host} (${address})`;
  return new RefusedTargetError(
    `${where} is a loopback, private, link-local or otherwise non-public address; set CRM_WEBHOOKS_ALLOW_PRIVATE=true to allow it`,
  );
}

/** A URL's host without the brackets of an IPv6 literal. */
export const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

function resolveAll(host: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new RefusedTargetError(`${host} could not be resolved in time`)),
      RESOLVE_TIMEOUT_MS,
    );
    lookup(host, { all: true, verbatim: true }, (err, addresses) => {
      clearTimeout(timer);
      if (err) reject(new RefusedTargetError(`${host} does not resolve (${err.code ?? err.message})`));
      else resolve(addresses);
    });
  });
}

/**
 * Checked when an endpoint is created: the URL's host must resolve, and only to public addresses.
 * A host with any non-public address is refused, since which one a connection uses is not ours to pick.
 */
export async function assertPublicTarget(url: URL): Promise<void> {
  const host = hostOf(url);
  const addresses = isIP(host) ? [host] : (await resolveAll(host)).map((a) => a.address);
  for (const address of addresses) if (!isPublicAddress(address)) throw refused(host, address);
}

/**
 * A DNS lookup for sockets that fails for a host resolving to any non-public address, so no connection
 * to such an address is even opened. It answers in whichever form the caller asked for (`all` or one).
 */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', undefined);
    const bad = addresses.find((a) => !isPublicAddress(a.address));
    if (bad) return callback(refused(hostname, bad.address), '', undefined);
    if (options.all) return callback(null, addresses);
    const first = addresses[0];
    if (!first) return callback(new RefusedTargetError(`${hostname} has no address`), '', undefined);
    return callback(null, first.address, first.family);
  });
};

/** The final check, on the address a socket actually connected to (covers IP literals, which skip DNS). */
export function assertPublicPeer(host: string, remoteAddress: string | undefined): void {
  if (!remoteAddress || !isPublicAddress(remoteAddress)) throw refused(host, remoteAddress ?? 'unknown');
}
