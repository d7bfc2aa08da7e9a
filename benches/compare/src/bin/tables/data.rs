//! The generated customers: their CSV, what the queries need to know of them, and the indexes
//! both engines get. The shape is a customer table as applications store it (STYLE #19):
//! real-length field names, 14 fields, text from 1 to 120 bytes, a sign-up date stored as
//! text that grows with the key (rows arrive in time order), NULL-heavy fields (`referrer_id`
//! 99 %, `notes` 80 %) and skewed ones (`home_town` Zipf, `account_status` 60/35/5).

use std::io::Write;
use std::path::Path;

/// SplitMix64.
#[derive(Clone)]
pub struct Rng(pub u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

pub const TOWNS: usize = 1000;
pub const FIRST: [&str; 12] = [
    "Ada", "Alan", "Barbara", "Claude", "Edsger", "Frances", "Grace", "John", "Leslie", "Margaret",
    "Niklaus", "Tony",
];
pub const LAST: [&str; 16] = [
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Lopez",
    "Wilson", "Anderson", "Taylor", "Moore", "Lee", "Walker", "Knuth",
];
pub const FIELDS: usize = 14;

/// Words of the free-text `notes` field.
const WORDS: [&str; 16] = [
    "prefers", "email", "contact", "after", "hours", "called", "about", "invoice", "late",
    "payment", "moved", "address", "VIP", "account", "review", "pending",
];

/// The sign-up date of the `id`-th of `rows` customers: ten years from 2015-01-01, in key
/// order, as `YYYY-MM-DD` text.
pub fn signup_date(id: u64, rows: u64) -> String {
    let day = (id.saturating_sub(1) * 3652 / rows.max(1)) as i64;
    date_text(16_436 + day)
}

/// Days since 1970-01-01 as `YYYY-MM-DD` (the proleptic Gregorian calendar).
pub fn date_text(days: i64) -> String {
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

pub fn town(i: usize) -> String {
    format!("Town{i:04}")
}

pub fn groups(rows: u64) -> u64 {
    (rows / 30).max(1)
}

/// What the queries need to know of the data: how many rows each town has.
pub struct Data {
    pub rows: u64,
    pub town_rows: Vec<u64>,
    /// What the TPC-H tables' shapes need.
    pub tpch: crate::tpch::TpchData,
}

impl Data {
    /// Towns with 800 to 1,250 rows: the "about a thousand rows" equality.
    pub fn thousand_towns(&self) -> Vec<String> {
        let towns: Vec<String> = (0..TOWNS)
            .filter(|&t| (800..=1250).contains(&self.town_rows[t]))
            .map(town)
            .collect();
        if towns.is_empty() {
            // A small table: the most common town.
            let most = (0..TOWNS).max_by_key(|&t| self.town_rows[t]).unwrap_or(0);
            return vec![town(most)];
        }
        towns
    }
}

/// Writes the CSV unless it exists with the right number of rows; returns its town counts.
pub fn generate(path: &Path, rows: u64) -> Data {
    let counts = path.with_extension(format!("{rows}.towns"));
    if let (true, Ok(text)) = (path.exists(), std::fs::read_to_string(&counts)) {
        let town_rows: Vec<u64> = text.lines().filter_map(|l| l.parse().ok()).collect();
        if town_rows.len() == TOWNS {
            return Data {
                rows,
                town_rows,
                tpch: Default::default(),
            };
        }
    }
    eprintln!("generating {rows} rows into {} ...", path.display());
    let mut cumulative = Vec::with_capacity(TOWNS);
    let mut total = 0.0;
    for k in 0..TOWNS {
        total += 1.0 / (k + 1) as f64;
        cumulative.push(total);
    }
    let mut town_rows = vec![0u64; TOWNS];
    let mut rng = Rng(7);
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("create CSV"));
    writeln!(
        out,
        "customer_id,first_name,last_name,home_town,account_status,age_years,group_id,\
         credit_score,account_balance,phone_number,referrer_id,email_address,signup_date,notes"
    )
    .expect("write");
    for id in 1..=rows {
        let first = FIRST[rng.below(FIRST.len() as u64) as usize];
        let last = LAST[rng.below(LAST.len() as u64) as usize];
        let x = rng.unit() * total;
        let t = cumulative.partition_point(|c| *c < x).min(TOWNS - 1);
        town_rows[t] += 1;
        let status = match rng.below(100) {
            0..60 => "active",
            60..95 => "closed",
            _ => "frozen",
        };
        let phone = if rng.below(400) == 0 {
            String::new()
        } else {
            format!("+44 7700 9{:05}", rng.below(100_000))
        };
        let referrer = if rng.below(100) == 0 {
            (1 + rng.below(rows)).to_string()
        } else {
            String::new()
        };
        let notes = if rng.below(5) == 0 {
            let words = 1 + rng.below(18) as usize;
            let mut text = String::new();
            for w in 0..words {
                if w > 0 {
                    text.push(' ');
                }
                text.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
            }
            text.truncate(120);
            text
        } else {
            String::new()
        };
        writeln!(
            out,
            "{id},{first},{last},{},{status},{},{},{},{}.{:02},{phone},{referrer},{}.{}{id}@example.com,{},{notes}",
            town(t),
            18 + rng.below(70),
            rng.below(groups(rows)),
            rng.below(100_000),
            rng.below(100_000),
            rng.below(100),
            first.to_lowercase(),
            last.to_lowercase(),
            signup_date(id, rows),
        )
        .expect("write");
    }
    out.flush().expect("flush");
    let text: String = town_rows.iter().map(|c| format!("{c}\n")).collect();
    std::fs::write(counts, text).expect("town counts");
    Data {
        rows,
        town_rows,
        tpch: Default::default(),
    }
}

pub const IMPORT_INDEXES: [(&str, &[&str]); 3] = [
    ("by_town", &["home_town"]),
    ("by_town_last", &["home_town", "last_name"]),
    ("by_email", &["email_address"]),
];

/// Indexes added for the queries: name, fields, the fields a covering index carries.
pub const QUERY_INDEXES: [(&str, &[&str], &[&str]); 8] = [
    ("by_grp", &["group_id"], &[]),
    (
        "by_grp_cover",
        &["group_id"],
        &["age_years", "account_balance"],
    ),
    (
        "by_town_cover",
        &["home_town"],
        &["age_years", "account_balance"],
    ),
    ("by_balance", &["account_balance"], &[]),
    ("by_status_age", &["account_status", "age_years"], &[]),
    ("by_phone", &["phone_number"], &[]),
    ("by_referrer", &["referrer_id"], &[]),
    ("by_signup", &["signup_date"], &[]),
];
