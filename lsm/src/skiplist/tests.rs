use super::*;

#[test]
fn entries_come_back_in_key_order_whatever_the_insertion_order() {
    let list = SkipList::new();
    let mut keys: Vec<u64> = (0..20_000).map(|i| (i * 7_919) % 20_011).collect();
    for &key in &keys {
        list.insert(key, key * 2).expect("room");
    }
    keys.sort_unstable();
    let got: Vec<(u64, u64)> = list.iter().map(|(k, v)| (*k, *v)).collect();
    let want: Vec<(u64, u64)> = keys.iter().map(|k| (*k, k * 2)).collect();
    assert_eq!(got, want);
    assert_eq!(list.len(), keys.len());
    assert_eq!(list.last().map(|p| *list.entry(p).0), keys.last().copied());
}

#[test]
fn seeks_find_the_neighbours_of_present_and_absent_keys() {
    let list = SkipList::new();
    for key in (0..1_000u32).map(|k| k * 10) {
        list.insert(key, ()).expect("room");
    }
    let key = |p: Option<Position>| p.map(|p| *list.entry(p).0);
    assert_eq!(key(list.seek(&0)), Some(0));
    assert_eq!(key(list.seek(&5)), Some(10));
    assert_eq!(key(list.seek(&9_990)), Some(9_990));
    assert_eq!(key(list.seek(&9_991)), None);
    assert_eq!(key(list.seek_after(&10)), Some(20));
    assert_eq!(key(list.seek_after(&9_990)), None);
    assert_eq!(key(list.seek_before(&10)), Some(0));
    assert_eq!(key(list.seek_before(&15)), Some(10));
    assert_eq!(key(list.seek_before(&0)), None);
    assert_eq!(key(list.first()), Some(0));
    assert_eq!(key(list.last()), Some(9_990));
}

#[test]
fn finger_searches_find_what_searches_from_the_head_find() {
    let list = SkipList::new();
    for key in (0..20_000u64).map(|k| (k * 7_919) % 20_011 * 3) {
        list.insert(key, ()).expect("room");
    }
    let key = |p: Option<Position>| p.map(|p| *list.entry(p).0);
    // Ascending runs with gaps from 0 (a repeat) to most of the list, present and absent
    // keys, and keys past the end.
    for gap in [0u64, 1, 2, 5, 40, 1_000, 30_000] {
        let mut finger = Finger::default();
        let mut probe = 0u64;
        while probe < 70_000 {
            assert_eq!(
                key(list.seek_near(&probe, &mut finger)),
                key(list.seek(&probe))
            );
            probe += gap.max(1) + (probe % 3) * u64::from(gap > 0);
        }
    }
    // A key below the last one is answered from the head, not from the finger.
    let mut finger = Finger::default();
    assert_eq!(
        key(list.seek_near(&50_000, &mut finger)),
        key(list.seek(&50_000))
    );
    for probe in [10_000u64, 9_999, 0, 60_000, 1] {
        assert_eq!(
            key(list.seek_near(&probe, &mut finger)),
            key(list.seek(&probe))
        );
    }
    // A finger outlives inserts, including taller towers than the list had.
    let mut finger = Finger::default();
    assert_eq!(key(list.seek_near(&100, &mut finger)), Some(102));
    for key in [101u64, 103, 5_000_001] {
        list.insert(key, ()).expect("room");
    }
    assert_eq!(key(list.seek_near(&101, &mut finger)), Some(101));
    assert_eq!(key(list.seek_near(&103, &mut finger)), Some(103));
    assert_eq!(
        key(list.seek_near(&5_000_000, &mut finger)),
        Some(5_000_001)
    );
}

/// Every level ascends (equal keys allowed) and is a subsequence of the level below, and
/// level 0 holds every node: what searches from the head and from a splice rely on.
/// A xorshift64 generator from `seed`: the tests' random keys, the same on every run.
fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

fn assert_well_formed<K: Ord + std::fmt::Debug, V>(list: &SkipList<K, V>) {
    let height = list.height.load(Ordering::Relaxed);
    let mut below: Option<std::collections::HashSet<u32>> = None;
    let mut heights = Vec::new();
    for level in 0..height {
        let mut nodes = Vec::new();
        let mut at = list.next(None, level);
        while let Some(index) = at {
            nodes.push(index);
            assert!(usize::from(list.slot(index).cold().height) > level);
            at = list.next(Some(index), level);
        }
        if level == 0 {
            heights = nodes
                .iter()
                .map(|&index| usize::from(list.slot(index).cold().height))
                .collect();
        }
        // Every node is linked at every level of its tower.
        let tall = heights.iter().filter(|&&h| h > level).count();
        assert_eq!(nodes.len(), tall, "level {level} misses a node");
        for pair in nodes.windows(2) {
            assert!(
                list.slot(pair[0]).key() <= list.slot(pair[1]).key(),
                "level {level} out of order"
            );
        }
        if let Some(below) = &below {
            assert!(nodes.iter().all(|index| below.contains(index)));
        } else {
            assert_eq!(nodes.len(), list.len());
            // The writer's back links name each node's level-0 predecessor.
            let mut prev = NIL;
            for &index in &nodes {
                let back = list.slot(index).cold().prev.load(Ordering::Relaxed);
                assert_eq!(back, prev, "node {index}'s back link");
                prev = index;
            }
        }
        below = Some(nodes.into_iter().collect());
    }
}

#[test]
fn inserts_above_the_last_start_from_its_splice_and_build_a_sound_list() {
    // Ascending runs (the splice serves them), repeats, steps back, a descending run,
    // and jumps far ahead, in one list.
    let mut keys: Vec<u64> = (0..3_000).collect();
    keys.extend([2_999, 2_999, 10, 10, 11, 5_000, 4_999, 4_998]);
    keys.extend((0..2_000).map(|i| 100_000 - i * 3));
    keys.extend((0..2_000).map(|i| 200_000 + i * 1_000));
    keys.extend((0..2_000).map(|i| (i * 7_919) % 20_011));
    keys.extend(1_000..1_500);
    let list = SkipList::new();
    for (i, &key) in keys.iter().enumerate() {
        list.insert(key, i).expect("room");
    }
    assert_well_formed(&list);
    let got: Vec<u64> = list.iter().map(|(k, _)| *k).collect();
    let mut want = keys.clone();
    want.sort_unstable();
    assert_eq!(got, want);
    // Equal keys: the newer insert comes first, as from the head.
    let sevens: Vec<usize> = {
        let list = SkipList::new();
        for i in 0..6 {
            list.insert(7u8, i).expect("room");
            list.insert(8u8, i).expect("room");
        }
        assert_well_formed(&list);
        list.iter()
            .filter(|(k, _)| **k == 7)
            .map(|(_, v)| *v)
            .collect()
    };
    assert_eq!(sevens, vec![5, 4, 3, 2, 1, 0]);
}

#[test]
fn equal_keys_are_all_kept_newest_first() {
    let list = SkipList::new();
    for value in 0..5 {
        list.insert(7u8, value).expect("room");
    }
    list.insert(3u8, 99).expect("room");
    let values: Vec<i32> = list.iter().map(|(_, v)| *v).collect();
    assert_eq!(values, [99, 4, 3, 2, 1, 0]);
    assert_eq!(list.seek_after(&3).map(|p| *list.entry(p).1), Some(4));
    assert_eq!(list.seek_after(&7), None);
}

#[test]
fn interleaved_inserts_build_the_same_lists_as_one_at_a_time() {
    let lists: Vec<SkipList<u64, u64>> = (0..3).map(|_| SkipList::new()).collect();
    let mut want: Vec<Vec<(u64, u64)>> = vec![Vec::new(); 3];
    for i in 0..5_000u64 {
        let mut entries = Vec::new();
        // The lists in a different order each time; a repeated key now and then.
        for j in [i % 3, (i + 1) % 3, (i + 2) % 3] {
            let key = (i * 7_919 + j * 104_729) % 3_001;
            entries.push((&lists[j as usize], key, i));
            want[j as usize].push((key, i));
        }
        SkipList::insert_each(entries).expect("room");
    }
    for (list, want) in lists.iter().zip(&mut want) {
        // Equal keys: the newest first.
        want.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let got: Vec<(u64, u64)> = list.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(&got, want);
        assert_eq!(list.len(), 5_000);
    }
}

#[test]
fn several_inserts_into_one_list_in_one_call_build_what_one_at_a_time_builds() {
    // Calls of 1 to 9 entries over two lists, most into the same one: random keys, equal
    // keys within a call, and ascending runs (the first of a call may use the splice, the
    // rest search from the head and are corrected as earlier ones go in).
    let lists: Vec<SkipList<u64, u64>> = (0..2).map(|_| SkipList::new()).collect();
    let mut want: Vec<Vec<(u64, u64)>> = vec![Vec::new(); 2];
    let mut seq = 0u64;
    let mut next = xorshift(0x2545_F491_4F6C_DD1Du64);
    for call in 0..4_000u64 {
        let n = 1 + next() % 9;
        let mut entries = Vec::new();
        let base = next() % 5_000;
        for k in 0..n {
            let j = usize::from(next().is_multiple_of(4));
            let key = match call % 3 {
                0 => next() % 5_000,
                1 => base + k,
                _ => base + next() % 3,
            };
            seq += 1;
            entries.push((&lists[j], key, seq));
            want[j].push((key, seq));
        }
        let given: Vec<(u64, u64)> = entries.iter().map(|(_, k, v)| (*k, *v)).collect();
        let owners: Vec<usize> = entries
            .iter()
            .map(|(l, _, _)| usize::from(std::ptr::eq(*l, &lists[1])))
            .collect();
        let linked = SkipList::insert_each(entries).expect("room");
        for ((linked, (key, value)), owner) in linked.iter().zip(given).zip(owners) {
            let list = &lists[owner];
            assert_eq!(list.entry(linked.at), (&key, &value));
            if let Some(after) = linked.after {
                assert!(*list.entry(after).0 < key, "the entry before is below");
            }
        }
    }
    for (list, want) in lists.iter().zip(&mut want) {
        assert_well_formed(list);
        // Equal keys: the newest first.
        want.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let got: Vec<(u64, u64)> = list.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(&got, want);
    }
}

#[test]
fn hinted_inserts_build_what_searched_inserts_build() {
    // Versions of a few hundred keys, newest seqno first, as a memtable orders them. Each
    // insert's hint is right (the key's newest version, which the new one precedes), stale
    // (taken before an earlier entry of the same call went in before it), or wrong (some
    // other node, before or after the place): the list checks each and searches when it
    // does not fit.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    struct Version {
        key: u64,
        newest_first: std::cmp::Reverse<u64>,
    }
    let list: SkipList<Version, u64> = SkipList::new();
    let mut want = Vec::new();
    let mut newest: std::collections::HashMap<u64, Position> = std::collections::HashMap::new();
    let mut any: Vec<Position> = Vec::new();
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15u64);
    let mut seq = 0u64;
    for call in 0..3_000u64 {
        let n = 1 + next() % 4;
        let mut entries = Vec::new();
        for _ in 0..n {
            let key = next() % 300;
            seq += 1;
            // Now and then a version older than the newest: it goes behind it.
            let seqno = if call % 5 == 0 { seq / 2 } else { seq };
            let version = Version {
                key,
                newest_first: std::cmp::Reverse(seqno),
            };
            let hint = match next() % 4 {
                0 if !any.is_empty() => Hint::Before(any[(next() % any.len() as u64) as usize]),
                1 => Hint::None,
                _ => newest.get(&key).map_or(Hint::None, |at| Hint::Before(*at)),
            };
            entries.push(((&list, version, seqno), hint));
            want.push((version, seqno));
        }
        let given: Vec<Version> = entries.iter().map(|((_, k, _), _)| *k).collect();
        let linked = SkipList::insert_each_hinted(entries).expect("room");
        for (linked, version) in linked.iter().zip(given) {
            assert_eq!(*list.entry(linked.at).0, version);
            if let Some(after) = linked.after {
                assert!(*list.entry(after).0 < version, "the entry before is below");
            }
            let first_of_key = linked
                .after
                .is_none_or(|after| list.entry(after).0.key != version.key);
            if first_of_key {
                newest.insert(version.key, linked.at);
            }
            any.push(linked.at);
        }
    }
    assert_well_formed(&list);
    want.sort();
    let got: Vec<(Version, u64)> = list.iter().map(|(k, v)| (*k, *v)).collect();
    assert_eq!(got, want);
}

#[test]
fn hinted_updates_between_appends_leave_a_sound_list() {
    // New keys appended in order (from the writer's splice), each followed by a new version
    // of one of the last few keys, placed by its hint right before that key's newest one. A
    // hinted node of two levels may become an upper level's last node: the next append
    // must not link behind it from a stale splice.
    type Version = (u64, std::cmp::Reverse<u64>);
    let list: SkipList<Version, u64> = SkipList::new();
    let mut newest: std::collections::HashMap<u64, Position> = std::collections::HashMap::new();
    let mut want = Vec::new();
    let mut next = xorshift(0x5DEE_CE66_D1CE_4E5Bu64);
    let mut seq = 0u64;
    for key in 0..6_000u64 {
        for (key, hint) in [
            (key, Hint::None),
            (key.saturating_sub(next() % 3), Hint::None),
        ] {
            seq += 1;
            let hint = newest.get(&key).map_or(hint, |at| Hint::Before(*at));
            let version = (key, std::cmp::Reverse(seq));
            let linked = list.insert_hinted(version, seq, hint).expect("room");
            newest.insert(key, linked.at);
            want.push((version, seq));
        }
    }
    assert_well_formed(&list);
    want.sort();
    let got: Vec<(Version, u64)> = list.iter().map(|(k, v)| (*k, *v)).collect();
    assert_eq!(got, want);
}

#[test]
fn located_inserts_build_what_searched_inserts_build() {
    // Each insert's predecessors were located some calls before it went in (so entries were
    // linked between, some at the levels of its tower), for its own key or a smaller one,
    // or in another list (ignored); calls of several entries of one list locate before any
    // of them goes in. Appends are mixed in, which a located insert must not mislead: it
    // leaves no splice.
    let list: SkipList<u64, u64> = SkipList::new();
    let other: SkipList<u64, u64> = SkipList::new();
    other.insert(5, 5).expect("room");
    let mut want = Vec::new();
    let mut next = xorshift(0x2545_F491_4F6C_DD1Du64);
    let mut waiting: std::collections::VecDeque<(u64, Hint)> = std::collections::VecDeque::new();
    let mut top = 1_000_000u64;
    for i in 0..6_000u64 {
        // Runs of appends (located before the appends just ahead of them went in, so their
        // upper predecessors are stale) between runs of random keys.
        let key = if (i / 200) % 2 == 0 {
            top += 1 + next() % 3;
            top
        } else {
            next() % 100_000
        };
        let hint = match next() % 5 {
            0 => Hint::Located(other.locate(&key)),
            1 => Hint::Located(list.locate(&key.saturating_sub(next() % 50))),
            _ => Hint::Located(list.locate(&key)),
        };
        waiting.push_back((key, hint));
        if waiting.len() > 6 {
            let n = 1 + (next() % 3) as usize;
            let entries: Vec<_> = waiting
                .drain(..n.min(waiting.len()))
                .map(|(key, hint)| ((&list, key, key), hint))
                .collect();
            want.extend(entries.iter().map(|((_, k, _), _)| *k));
            SkipList::insert_each_hinted(entries).expect("room");
        }
    }
    assert_well_formed(&list);
    want.sort();
    let got: Vec<u64> = list.iter().map(|(k, _)| *k).collect();
    assert_eq!(got, want);
}

#[test]
fn an_empty_list_has_no_positions() {
    let list: SkipList<u8, ()> = SkipList::new();
    assert!(list.is_empty());
    assert_eq!(list.first(), None);
    assert_eq!(list.last(), None);
    assert_eq!(list.seek(&0), None);
    assert_eq!(list.seek_before(&255), None);
    assert_eq!(list.iter().count(), 0);
}

#[test]
fn readers_on_other_threads_see_a_sorted_list_that_only_grows() {
    let list = std::sync::Arc::new(SkipList::new());
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (list, done) = (list.clone(), done.clone());
            std::thread::spawn(move || {
                let mut last_len = 0;
                while !done.load(Ordering::Acquire) {
                    let len_before = list.len();
                    let keys: Vec<u64> = list.iter().map(|(k, _)| *k).collect();
                    assert!(keys.windows(2).all(|w| w[0] < w[1]), "sorted");
                    assert!(keys.len() >= len_before, "nothing counted is missing");
                    assert!(keys.len() >= last_len, "the list only grows");
                    last_len = keys.len();
                }
            })
        })
        .collect();
    for i in 0..50_000u64 {
        list.insert(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16, ())
            .expect("room");
    }
    done.store(true, Ordering::Release);
    for reader in readers {
        reader.join().expect("reader");
    }
    assert_eq!(list.iter().count(), 50_000);
}
