CREATE OR REPLACE FUNCTION budgets_spend_hold_v1(
    ids bigint[], limits bigint[], byok boolean[], amount bigint,
    reservation uuid, request text, counter_ids jsonb, created timestamptz, expires timestamptz
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    used bigint;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    PERFORM 1 FROM budgets_spendcounter WHERE id = ANY(ids) ORDER BY id FOR UPDATE;
    FOR i IN 1 .. cardinality(ids) LOOP
        SELECT spent_units + reserved_units + CASE WHEN byok[i] THEN byok_spent_units ELSE 0 END INTO used
        FROM budgets_spendcounter WHERE id = ids[i];
        IF used IS NULL OR used + amount > limits[i] OR (amount = 0 AND used >= limits[i]) THEN
            RETURN ids[i];
        END IF;
    END LOOP;
    UPDATE budgets_spendcounter SET reserved_units = reserved_units + amount WHERE id = ANY(ids);
    INSERT INTO budgets_spendreservation (id, request_id, amount_units, counter_ids, created_at, expires_at)
    VALUES (reservation, request, amount, counter_ids, created, expires);
    RETURN NULL;
END
$$;
