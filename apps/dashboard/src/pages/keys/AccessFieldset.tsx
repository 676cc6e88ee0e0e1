import type { Scope } from '@crm/api';
import { SCOPE_GROUPS, SCOPE_INFO } from './scopes.ts';

export type Access = 'full' | 'scoped';

/** What a new key may do: full access, or the scopes checked, in their groups. */
export function AccessFieldset({
  access,
  onAccess,
  scopes,
  onToggle,
}: {
  access: Access;
  onAccess: (access: Access) => void;
  scopes: ReadonlySet<Scope>;
  onToggle: (scope: Scope, on: boolean) => void;
}) {
  return (
    <fieldset className="fieldset">
      <legend>Access</legend>
      <div className="radio-list">
        <label className="checkbox">
          <input
            type="radio"
            name="access"
            value="full"
            checked={access === 'full'}
            onChange={() => onAccess('full')}
            aria-describedby="key-access-full-hint"
          />
          Full access
        </label>
        <p className="hint choice-hint" id="key-access-full-hint">
          Every operation, including those added later.
        </p>
        <label className="checkbox">
          <input
            type="radio"
            name="access"
            value="scoped"
            checked={access === 'scoped'}
            onChange={() => onAccess('scoped')}
          />
          Only these scopes
        </label>
      </div>
      {access === 'scoped' && (
        <fieldset className="fieldset scope-fieldset">
          <legend className="visually-hidden">Scopes</legend>
          <div className="scope-groups">
            {SCOPE_GROUPS.map(({ group, scopes: inGroup }) => (
              <fieldset key={group} className="scope-group">
                <legend>{group}</legend>
                {inGroup.map((scope) => (
                  <label key={scope} className="checkbox">
                    <input
                      type="checkbox"
                      name="scopes"
                      value={scope}
                      checked={scopes.has(scope)}
                      onChange={(e) => onToggle(scope, e.target.checked)}
                    />
                    <span>
                      <code>{scope}</code> — {SCOPE_INFO[scope].description}
                    </span>
                  </label>
                ))}
              </fieldset>
            ))}
          </div>
        </fieldset>
      )}
    </fieldset>
  );
}
