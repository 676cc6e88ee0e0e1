import { type ButtonHTMLAttributes, createContext, type ReactNode, useContext } from 'react';

/** A column's header; a `num` column holds figures, right-aligned. */
export type Column = string | { label: string; num: true };

type Props = {
  /** The table's name, for screen readers (and tests: getByRole('table', { name })). */
  caption: string;
  columns: readonly Column[];
  /** A last column of buttons (each row's ActionsCell), its header for screen readers only. */
  actions?: boolean;
  /**
   * Below 640 px each row becomes a card instead of the table scrolling sideways (`table-stack` in
   * styles.css): each cell other than the row's header then needs its column's name in `data-label`.
   */
  cards?: boolean;
  compact?: boolean;
  /** In a bordered frame of its own that scrolls sideways; not for a table inside another one. */
  framed?: boolean;
  className?: string;
  /** The <tbody>, or one for each group of rows. */
  children: ReactNode;
};

/** The columns of the table around a row, for the cells that follow them. */
const Columns = createContext({ count: 0, actions: false });

/** A table of records with a hidden caption and a row of column headers. */
export function Table({
  caption,
  columns,
  actions = false,
  cards = true,
  compact = false,
  framed = true,
  className,
  children,
}: Props) {
  const classes = ['table', compact && 'table-compact', cards && 'table-stack', className];
  const table = (
    <table className={classes.filter(Boolean).join(' ')}>
      <caption className="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          {columns.map((column) =>
            typeof column === 'string' ? (
              <th key={column} scope="col">
                {column}
              </th>
            ) : (
              <th key={column.label} scope="col" className="num">
                {column.label}
              </th>
            ),
          )}
          {actions && (
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          )}
        </tr>
      </thead>
      <Columns.Provider value={{ count: columns.length + (actions ? 1 : 0), actions }}>
        {children}
      </Columns.Provider>
    </table>
  );
  return framed ? <div className="table-wrap">{table}</div> : table;
}

type RowButtonProps = Omit<ButtonHTMLAttributes<HTMLButtonElement>, 'type' | 'className'> & {
  /** Outlined in red: it asks before it removes or revokes the row's record. */
  danger?: boolean;
};

/** A button in a row's actions cell. */
export function RowButton({ danger = false, ...button }: RowButtonProps) {
  return (
    <button
      type="button"
      className={danger ? 'btn btn-small btn-danger-outline' : 'btn btn-small'}
      {...button}
    />
  );
}

/** A row's cell in the actions column; none where its table has no such column (a member sees no buttons). */
export function ActionsCell({ children }: { children: ReactNode }) {
  return useContext(Columns).actions ? <td className="cell-actions">{children}</td> : null;
}

/** A cell across every column of its table: a row that belongs to the one above it. */
export function FullRowCell({ children }: { children: ReactNode }) {
  return <td colSpan={useContext(Columns).count}>{children}</td>;
}
