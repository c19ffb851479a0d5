CREATE OR REPLACE FUNCTION budgets_spend_hold_v2(
    ids bigint[], limits bigint[], byok boolean[], amount bigint,
    reservation uuid, request text, counter_ids jsonb, created timestamptz, expires timestamptz
) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    FOR i IN 1 .. cardinality(ids) LOOP
        UPDATE budgets_spendcounter SET reserved_units = reserved_units + amount
        WHERE id = ids[i]
          AND spent_units + reserved_units + CASE WHEN byok[i] THEN byok_spent_units ELSE 0 END + amount <= limits[i]
          AND (amount > 0 OR spent_units + reserved_units + CASE WHEN byok[i] THEN byok_spent_units ELSE 0 END
               < limits[i]);
        IF NOT FOUND THEN
            IF i > 1 THEN
                UPDATE budgets_spendcounter SET reserved_units = reserved_units - amount WHERE id = ANY(ids[1:i - 1]);
            END IF;
            RETURN ids[i];
        END IF;
    END LOOP;
    INSERT INTO budgets_spendreservation (id, request_id, amount_units, counter_ids, created_at, expires_at)
    VALUES (reservation, request, amount, counter_ids, created, expires);
    RETURN NULL;
END
$$;
