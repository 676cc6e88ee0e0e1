import type { DeliveryStatus } from '../api.ts';

const DELIVERY_BADGE: Record<DeliveryStatus, { className: string; label: string }> = {
  pending: { className: 'badge-info', label: 'Pending' },
  succeeded: { className: 'badge-success', label: 'Succeeded' },
  failed: { className: 'badge-danger', label: 'Failed' },
  cancelled: { className: 'badge-neutral', label: 'Cancelled' },
};

export function DeliveryStatusBadge({ status }: { status: DeliveryStatus }) {
  const badge = DELIVERY_BADGE[status];
  return <span className={`badge ${badge.className}`}>{badge.label}</span>;
}

export function deliveryStatusLabel(status: DeliveryStatus): string {
  return DELIVERY_BADGE[status].label;
}

export function ActiveBadge({ active }: { active: boolean }) {
  return active ? (
    <span className="badge badge-success">Active</span>
  ) : (
    <span className="badge badge-danger">Disabled</span>
  );
}
