/** Names the API knows (scopes, event types) as a row of code tags that wraps. */
export function CodeList({ items }: { items: readonly string[] }) {
  return (
    <ul className="tag-list">
      {items.map((item) => (
        <li key={item}>
          <code>{item}</code>
        </li>
      ))}
    </ul>
  );
}
