//! What the comparison binaries share: `strata-compare` (key-value, `src/main.rs`) and
//! `tables` (`src/bin/tables/`).

/// The median of `figures` (the mean of the middle two for an even count; NaN for none).
pub fn median(mut figures: Vec<f64>) -> f64 {
    figures.sort_by(f64::total_cmp);
    let mid = figures.len() / 2;
    if figures.is_empty() {
        return f64::NAN;
    }
    if figures.len().is_multiple_of(2) {
        (figures[mid - 1] + figures[mid]) / 2.0
    } else {
        figures[mid]
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn the_median_of_odd_even_and_no_figures() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(Vec::new()).is_nan());
    }
}
