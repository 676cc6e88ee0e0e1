import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { type ReactNode, useState } from 'react';
import { queries } from '../api.ts';
import { Pager } from '../components/Pager.tsx';
import { EmptyState, ErrorState, Loading, PageHeader } from '../components/States.tsx';
import { Table } from '../components/Table.tsx';
import { formatDateTime, formatDetails } from '../format.ts';
import { usePageTitle } from '../hooks.ts';

const PAGE_SIZE = 50;

export function AuditPage() {
  usePageTitle('Audit log');
  const [offset, setOffset] = useState(0);
  const audit = useQuery({
    ...queries.audit({ limit: PAGE_SIZE, offset }),
    placeholderData: keepPreviousData,
  });

  let body: ReactNode;
  if (audit.isPending) body = <Loading />;
  else if (audit.isError) body = <ErrorState error={audit.error} onRetry={() => audit.refetch()} />;
  else if (audit.data.data.length === 0 && offset === 0) body = <EmptyState title="Nothing recorded yet" />;
  else {
    const { data } = audit.data;
    body = (
      <>
        <Table caption="Audit log" columns={['Time', 'Actor', 'Action', 'Target', 'Details']}>
          <tbody>
            {data.map((entry) => (
              <tr key={entry.id}>
                <th scope="row" className="nowrap">
                  {formatDateTime(entry.at)}
                </th>
                <td data-label="Actor">{entry.actor}</td>
                <td data-label="Action">
                  <code className="nowrap">{entry.action}</code>
                </td>
                <td className="break" data-label="Target">
                  {entry.target ?? <span className="muted">—</span>}
                </td>
                <td className="break" data-label="Details">
                  {entry.details ? formatDetails(entry.details) : <span className="muted">—</span>}
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
        <Pager page={audit.data} onChange={setOffset} busy={audit.isPlaceholderData} />
      </>
    );
  }

  return (
    <>
      <PageHeader title="Audit log" description="Who did what in this organization, newest first." />
      {body}
    </>
  );
}
