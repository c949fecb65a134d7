//! Einsum equations (numpy semantics): shape inference and the label layout the
//! interpreter iterates over. `...` stands for broadcast batch axes; without `->` the
//! output holds the ellipsis axes, then every label used exactly once, alphabetically.

/// A parsed equation bound to operand shapes. Labels are numbered 0..dims.len().
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EinsumSpec {
    /// Label of every axis of every operand.
    pub inputs: Vec<Vec<usize>>,
    /// Labels of the output axes.
    pub output: Vec<usize>,
    /// Extent of every label (broadcast over the operands that have it).
    pub dims: Vec<usize>,
}

enum Term {
    Label(char),
    Ellipsis,
}

fn parse_term(s: &str) -> Result<Vec<Term>, String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' => {}
            '.' => {
                if chars.next() != Some('.') || chars.next() != Some('.') {
                    return Err(format!("'{s}': a '.' that is not part of '...'"));
                }
                out.push(Term::Ellipsis);
            }
            c if c.is_ascii_alphabetic() => out.push(Term::Label(c)),
            c => return Err(format!("'{s}': unexpected character '{c}'")),
        }
    }
    if out.iter().filter(|t| matches!(t, Term::Ellipsis)).count() > 1 {
        return Err(format!("'{s}' has more than one '...'"));
    }
    Ok(out)
}

/// Bind `equation` to operand shapes.
pub fn einsum_spec(equation: &str, shapes: &[&[usize]]) -> Result<EinsumSpec, String> {
    let (lhs, rhs) = match equation.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (equation, None),
    };
    let terms: Vec<Vec<Term>> = lhs.split(',').map(parse_term).collect::<Result<_, _>>()?;
    if terms.len() != shapes.len() {
        return Err(format!(
            "the equation has {} operands but the node has {} inputs",
            terms.len(),
            shapes.len()
        ));
    }
    // Ellipsis rank: the most axes any operand's '...' covers.
    let mut ell_rank = 0;
    for (t, s) in terms.iter().zip(shapes) {
        let named = t.iter().filter(|x| matches!(x, Term::Label(_))).count();
        let has_ell = t.iter().any(|x| matches!(x, Term::Ellipsis));
        if (has_ell && s.len() < named) || (!has_ell && s.len() != named) {
            return Err(format!(
                "an operand of rank {} does not match its {named} labels",
                s.len()
            ));
        }
        if has_ell {
            ell_rank = ell_rank.max(s.len() - named);
        }
    }
    // Labels 0..ell_rank are the ellipsis axes; letters follow in order of appearance.
    let mut letters: Vec<char> = Vec::new();
    let mut dims: Vec<usize> = vec![1; ell_rank];
    let mut counts: Vec<usize> = vec![0; ell_rank];
    let mut inputs = Vec::new();
    for (t, s) in terms.iter().zip(shapes) {
        let named = t.iter().filter(|x| matches!(x, Term::Label(_))).count();
        let own_ell = s.len() - named;
        let mut labels = Vec::new();
        let mut axis = 0;
        for term in t {
            match term {
                Term::Ellipsis => {
                    for e in 0..own_ell {
                        let l = ell_rank - own_ell + e;
                        let d = s[axis];
                        if dims[l] != d && dims[l] != 1 && d != 1 {
                            return Err(format!(
                                "'...' axes {:?} do not broadcast",
                                &s[axis..axis + own_ell]
                            ));
                        }
                        if d != 1 {
                            dims[l] = d;
                        }
                        labels.push(l);
                        axis += 1;
                    }
                }
                Term::Label(c) => {
                    let l = match letters.iter().position(|x| x == c) {
                        Some(p) => ell_rank + p,
                        None => {
                            letters.push(*c);
                            dims.push(s[axis]);
                            counts.push(0);
                            dims.len() - 1
                        }
                    };
                    let d = s[axis];
                    if dims[l] != d {
                        if dims[l] == 1 {
                            dims[l] = d;
                        } else if d != 1 {
                            return Err(format!("label '{c}' has extents {} and {d}", dims[l]));
                        }
                    }
                    counts[l] += 1;
                    labels.push(l);
                    axis += 1;
                }
            }
        }
        inputs.push(labels);
    }
    let output = match rhs {
        Some(r) => {
            let mut out = Vec::new();
            for term in parse_term(r)? {
                match term {
                    Term::Ellipsis => out.extend(0..ell_rank),
                    Term::Label(c) => {
                        let p = letters
                            .iter()
                            .position(|x| *x == c)
                            .ok_or_else(|| format!("output label '{c}' is not an input label"))?;
                        if out.contains(&(ell_rank + p)) {
                            return Err(format!("output label '{c}' appears twice"));
                        }
                        out.push(ell_rank + p);
                    }
                }
            }
            out
        }
        None => {
            let mut once: Vec<(char, usize)> = letters
                .iter()
                .enumerate()
                .filter(|(p, _)| counts[ell_rank + p] == 1)
                .map(|(p, &c)| (c, ell_rank + p))
                .collect();
            once.sort_unstable();
            (0..ell_rank)
                .chain(once.into_iter().map(|(_, l)| l))
                .collect()
        }
    };
    Ok(EinsumSpec {
        inputs,
        output,
        dims,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let s = einsum_spec("bij,bjk->bik", &[&[2, 3, 4], &[2, 4, 5]]).unwrap();
        let out: Vec<usize> = s.output.iter().map(|&l| s.dims[l]).collect();
        assert_eq!(out, vec![2, 3, 5]);
        let s = einsum_spec("...ii ->...i", &[&[3, 5, 5]]).unwrap();
        let out: Vec<usize> = s.output.iter().map(|&l| s.dims[l]).collect();
        assert_eq!(out, vec![3, 5]);
        let s = einsum_spec("ij,jk", &[&[2, 3], &[3, 4]]).unwrap();
        let out: Vec<usize> = s.output.iter().map(|&l| s.dims[l]).collect();
        assert_eq!(out, vec![2, 4]);
        assert!(einsum_spec("->", &[&[]]).unwrap().output.is_empty());
        assert!(einsum_spec("ij->k", &[&[2, 3]]).is_err());
    }
}
