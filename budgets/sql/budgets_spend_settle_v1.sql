CREATE OR REPLACE FUNCTION budgets_spend_settle_v1(
    reservations uuid[], amounts bigint[], costs bigint[], byok boolean[], owners integer[], counters bigint[]
) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    gone uuid[];
    gone_reaped boolean[];
    ids bigint[];
    releases bigint[];
    spents bigint[];
    byok_spents bigint[];
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    WITH deleted AS (
        DELETE FROM budgets_spendreservation WHERE id = ANY(reservations)
        RETURNING id, reaped_at IS NOT NULL AS reaped
    )
    SELECT array_agg(id), array_agg(reaped) INTO gone, gone_reaped FROM deleted;
    WITH settlement AS (
        SELECT i, r, a, c, b, row_number() OVER (PARTITION BY r ORDER BY i) AS nth
        FROM unnest(reservations, amounts, costs, byok) WITH ORDINALITY AS s(r, a, c, b, i)
    ), removed AS (
        SELECT * FROM unnest(coalesce(gone, '{}'), coalesce(gone_reaped, '{}')) AS d(id, reaped)
    ), each_one AS (
        SELECT settlement.i,
               CASE WHEN settlement.nth = 1 AND removed.reaped = false THEN settlement.a ELSE 0 END AS release,
               CASE WHEN settlement.nth = 1 AND removed.reaped THEN settlement.a ELSE 0 END AS uncharge,
               settlement.c AS cost,
               settlement.b AS paid_byok
        FROM settlement LEFT JOIN removed ON removed.id = settlement.r
    ), totals AS (
        SELECT k.counter_id,
               sum(each_one.release)::bigint AS release,
               sum(CASE WHEN each_one.paid_byok THEN 0 ELSE each_one.cost END - each_one.uncharge)::bigint AS spent,
               sum(CASE WHEN each_one.paid_byok THEN each_one.cost ELSE 0 END)::bigint AS byok_spent
        FROM unnest(owners, counters) AS k(owner, counter_id) JOIN each_one ON each_one.i = k.owner
        GROUP BY k.counter_id
    )
    SELECT array_agg(counter_id ORDER BY counter_id), array_agg(release ORDER BY counter_id),
           array_agg(spent ORDER BY counter_id), array_agg(byok_spent ORDER BY counter_id)
    INTO ids, releases, spents, byok_spents
    FROM totals WHERE release <> 0 OR spent <> 0 OR byok_spent <> 0;
    IF ids IS NULL THEN
        RETURN coalesce(cardinality(gone), 0);
    END IF;
    PERFORM 1 FROM budgets_spendcounter WHERE id = ANY(ids) ORDER BY id FOR UPDATE;
    UPDATE budgets_spendcounter AS counter
    SET reserved_units = counter.reserved_units - t.release,
        spent_units = counter.spent_units + t.spent,
        byok_spent_units = counter.byok_spent_units + t.byok_spent
    FROM unnest(ids, releases, spents, byok_spents) AS t(id, release, spent, byok_spent)
    WHERE counter.id = t.id;
    RETURN coalesce(cardinality(gone), 0);
END
$$;
