//! MPI_Dims_create: the most balanced grid for a number of processes.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;

use super::cartesian::check_ndims;
use crate::consts::*;
use crate::error::{error, finish};

/// The divisors of `n`, ascending.
fn divisors(n: usize) -> Vec<usize> {
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut divisor = 1;
    while divisor * divisor <= n {
        if n.is_multiple_of(divisor) {
            small.push(divisor);
            if divisor * divisor != n {
                large.push(n / divisor);
            }
        }
        divisor += 1;
    }
    small.extend(large.into_iter().rev());
    small
}

/// Whether `base` to the power `exponent` is at least `target`.
fn power_reaches(base: usize, exponent: usize, target: usize) -> bool {
    if base <= 1 {
        return target <= 1;
    }
    let mut power = 1usize;
    for _ in 0..exponent {
        power = power.saturating_mul(base);
        if power >= target {
            return true;
        }
    }
    power >= target
}

/// A depth-first search over the non-increasing factorisations, in lexicographic order.
struct Search<'a> {
    divisors: &'a [usize],
    current: Vec<usize>,
    best: Vec<usize>,
    best_spread: usize,
}

impl Search<'_> {
    /// Tries every completion of `current` by `slots` non-increasing factors of `rest`, none above
    /// `bound`; keeps a completion only if it is strictly better, so ties go to the first found.
    fn extend(&mut self, rest: usize, slots: usize, bound: usize) {
        if rest == 1 {
            // The only completion is all ones; taking it here keeps the depth at the number of
            // prime factors, whatever the number of dimensions.
            let smallest = if slots > 0 { 1 } else { self.current[self.current.len() - 1] };
            let spread = self.current.first().map_or(0, |&top| top - smallest);
            if spread < self.best_spread {
                self.best_spread = spread;
                self.best.clone_from(&self.current);
                self.best.resize(self.current.len() + slots, 1);
            }
            return;
        }
        if slots == 0 {
            return;
        }
        for index in 0..self.divisors.len() {
            let factor = self.divisors[index];
            if factor > bound || factor > rest {
                break;
            }
            // The remaining factors are at most `factor`, so they must be able to reach `rest`.
            if !rest.is_multiple_of(factor) || !power_reaches(factor, slots, rest) {
                continue;
            }
            // Every later factor is at most `factor`: the spread cannot get below top - factor.
            let top = self.current.first().copied().unwrap_or(factor);
            if top - factor >= self.best_spread {
                continue;
            }
            self.current.push(factor);
            self.extend(rest / factor, slots - 1, factor);
            self.current.pop();
        }
    }
}

/// `n` as a product of `count` non-increasing factors, as balanced as possible: the smallest
/// difference between the largest and the smallest factor, ties going to the lexicographically
/// smallest list (72 in two dimensions is 9x8, as MPICH gives). Empty when `count` is 0.
pub fn balanced_factors(n: usize, count: usize) -> Vec<usize> {
    if count == 0 {
        return Vec::new();
    }
    let divisors = divisors(n);
    let mut search = Search { divisors: &divisors, current: Vec::with_capacity(count), best: Vec::new(), best_spread: usize::MAX };
    search.extend(n, count, n);
    search.best
}

/// MPI_Dims_create: fills the zero entries of `dims` so that the product is `nodes`, as balanced
/// as possible and in non-increasing order; positive entries are kept. Errors are (class, detail).
pub fn dims_create(nodes: c_int, dims: &mut [c_int]) -> Result<(), (c_int, String)> {
    if nodes <= 0 {
        return Err((MPI_ERR_ARG, format!("nnodes {nodes} must be positive")));
    }
    if let Some(bad) = dims.iter().find(|&&d| d < 0) {
        return Err((MPI_ERR_DIMS, format!("dimension {bad} is negative")));
    }
    let fixed = dims.iter().filter(|&&d| d > 0).fold(1usize, |product, &d| product.saturating_mul(d as usize));
    if !(nodes as usize).is_multiple_of(fixed) {
        return Err((MPI_ERR_DIMS, format!("{nodes} processes cannot fill the fixed dimensions (product {fixed})")));
    }
    let free: Vec<usize> = dims.iter().enumerate().filter(|(_, &d)| d == 0).map(|(i, _)| i).collect();
    let remaining = nodes as usize / fixed;
    if free.is_empty() && remaining != 1 {
        return Err((MPI_ERR_DIMS, format!("the dimensions multiply to {fixed}, not {nodes}")));
    }
    let sizes = balanced_factors(remaining, free.len());
    for (index, size) in free.into_iter().zip(sizes) {
        dims[index] = size as c_int;
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) -> c_int {
    let result = (|| {
        let count = check_ndims(MPI_COMM_WORLD, ndims)?;
        if count > 0 && dims.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "dims must not be NULL"));
        }
        let dims: &mut [c_int] = if count == 0 {
            &mut []
        } else {
            // SAFETY: non-null; MPI requires `ndims` ints.
            unsafe { std::slice::from_raw_parts_mut(dims, count) }
        };
        dims_create(nnodes, dims).map_err(|(class, detail)| error(MPI_COMM_WORLD, class, detail))
    })();
    finish("MPI_Dims_create", result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims_of(nodes: c_int, mut dims: Vec<c_int>) -> Result<Vec<c_int>, c_int> {
        dims_create(nodes, &mut dims).map(|_| dims).map_err(|(class, _)| class)
    }

    fn free_dims(nodes: c_int, count: usize) -> Vec<c_int> {
        dims_of(nodes, vec![0; count]).unwrap()
    }

    #[test]
    fn dims_are_balanced_and_non_increasing() {
        assert_eq!(free_dims(12, 2), vec![4, 3]);
        assert_eq!(free_dims(16, 3), vec![4, 2, 2]);
        assert_eq!(free_dims(36, 2), vec![6, 6]);
        assert_eq!(free_dims(7, 2), vec![7, 1]);
        assert_eq!(free_dims(1, 3), vec![1, 1, 1]);
    }

    #[test]
    fn dims_agree_with_mpich_and_open_mpi() {
        // Pairs where MPICH 4.0 and Open MPI 4.1 give the same answer.
        let agreed: &[(c_int, &[c_int])] = &[
            (24, &[4, 3, 2]),
            (1000, &[10, 10, 10]),
            (12, &[3, 2, 2, 1]),
            (4096, &[16, 16, 16]),
            (10000, &[10, 10, 10, 10]),
            (65536, &[16, 8, 8, 8, 8]),
            (100000, &[10, 10, 8, 5, 5, 5]),
            (1 << 20, &[1024, 1024]),
            (30, &[5, 3, 2]),
            (64, &[4, 4, 4]),
            (60, &[5, 4, 3]),
            (2, &[2, 1, 1, 1, 1]),
            (97, &[97, 1]),
            (6, &[6]),
        ];
        for &(nodes, expected) in agreed {
            assert_eq!(free_dims(nodes, expected.len()), expected, "{nodes} in {} dimensions", expected.len());
        }
    }

    #[test]
    fn dims_are_more_balanced_than_greedy_prime_assignment() {
        // MPICH's answers; Open MPI's greedy assignment gives 12x6, 18x10, 20x12, 24x12, 24x14,
        // 42x30x26x22 and 117x111x77.
        let balanced: &[(c_int, &[c_int])] = &[(72, &[9, 8]), (180, &[15, 12]), (240, &[16, 15]), (288, &[18, 16]), (336, &[21, 16]), (720720, &[33, 30, 28, 26]), (999999, &[111, 99, 91])];
        for &(nodes, expected) in balanced {
            assert_eq!(free_dims(nodes, expected.len()), expected, "{nodes} in {} dimensions", expected.len());
        }
    }

    #[test]
    fn every_answer_is_a_non_increasing_factorisation_with_the_smallest_spread() {
        for nodes in 1..=400usize {
            for count in 1..=5usize {
                let dims = free_dims(nodes as c_int, count);
                assert_eq!(dims.iter().map(|&d| d as usize).product::<usize>(), nodes);
                assert!(dims.windows(2).all(|pair| pair[0] >= pair[1]), "{nodes}/{count}: {dims:?}");
                let spread = (dims[0] - dims[count - 1]) as usize;
                assert_eq!(spread, brute_force_spread(nodes, count), "{nodes}/{count}: {dims:?}");
            }
        }
    }

    /// The smallest max - min over every way to write `n` as `count` factors.
    fn brute_force_spread(n: usize, count: usize) -> usize {
        fn walk(rest: usize, count: usize, chosen: &mut Vec<usize>, best: &mut usize) {
            if count == 0 {
                if rest == 1 {
                    *best = (*best).min(chosen.iter().max().unwrap() - chosen.iter().min().unwrap());
                }
                return;
            }
            for factor in (1..=rest).filter(|&f| rest.is_multiple_of(f)) {
                chosen.push(factor);
                walk(rest / factor, count - 1, chosen, best);
                chosen.pop();
            }
        }
        let mut best = usize::MAX;
        walk(n, count, &mut Vec::new(), &mut best);
        best
    }

    #[test]
    fn large_and_awkward_requests_finish() {
        let highly_composite = 735_134_400;
        let dims = free_dims(highly_composite, 8);
        assert_eq!(dims.iter().map(|&d| d as i64).product::<i64>(), highly_composite as i64);
        assert_eq!(free_dims(1 << 30, 30), vec![2; 30]);
        assert_eq!(free_dims(c_int::MAX, 3), vec![c_int::MAX, 1, 1]);
        let ones = free_dims(1, 1_000_000);
        assert!(ones.len() == 1_000_000 && ones.iter().all(|&d| d == 1));
        let wide = free_dims(6, 1_000_000);
        assert_eq!(&wide[..3], &[3, 2, 1]);
        let many = free_dims(720, 200);
        assert_eq!(&many[..8], &[5, 3, 3, 2, 2, 2, 2, 1]);
        assert!(many[8..].iter().all(|&d| d == 1));
    }

    #[test]
    fn fixed_dims_are_kept() {
        assert_eq!(dims_of(12, vec![0, 3, 0]).unwrap(), vec![2, 3, 2]);
        assert_eq!(dims_of(72, vec![0, 2, 0]).unwrap(), vec![6, 2, 6]);
        assert_eq!(dims_of(6, vec![2, 3]).unwrap(), vec![2, 3]);
        assert_eq!(dims_of(7, vec![0, 3]).unwrap_err(), MPI_ERR_DIMS);
        assert_eq!(dims_of(6, vec![2, 2]).unwrap_err(), MPI_ERR_DIMS);
        assert_eq!(dims_of(6, vec![-1, 0]).unwrap_err(), MPI_ERR_DIMS);
        assert_eq!(dims_of(0, vec![0]).unwrap_err(), MPI_ERR_ARG);
        assert_eq!(dims_of(-4, vec![0]).unwrap_err(), MPI_ERR_ARG);
        assert_eq!(dims_of(1, vec![]).unwrap(), Vec::<c_int>::new());
        assert_eq!(dims_of(4, vec![]).unwrap_err(), MPI_ERR_DIMS);
    }

    #[test]
    fn the_entry_point_checks_ndims() {
        let mut dims = [0; 2];
        // SAFETY: two ints; errors before MPI_Init are returned.
        unsafe {
            assert_eq!(MPI_Dims_create(6, -1, dims.as_mut_ptr()), MPI_ERR_DIMS);
            assert_eq!(MPI_Dims_create(6, 2, std::ptr::null_mut()), MPI_ERR_ARG);
            assert_eq!(MPI_Dims_create(6, 2, dims.as_mut_ptr()), MPI_SUCCESS);
            assert_eq!(MPI_Dims_create(1, 0, std::ptr::null_mut()), MPI_SUCCESS);
        }
        assert_eq!(dims, [3, 2]);
    }
}
