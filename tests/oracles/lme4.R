# The oracle of tests/test_mixed_models.py: R's lme4 and lmerTest fit each case of a manifest (one row per case:
# data, formula, the factor with its coding, levels in order and coefficient names) and write, per case, its fixed
# effects with lmerTest's Satterthwaite t tests, REMLcrit, isSingular, the variance components, each fixed term's
# likelihood-ratio test (ML fits with and without it, as drop1) and every pairwise comparison of the factor's levels
# (lmerTest's contest1D) with Holm's correction.
suppressMessages({library(lme4); library(lmerTest)})
manifest <- read.csv(commandArgs(trailingOnly = TRUE)[1], stringsAsFactors = FALSE)
row <- function(kind, name, value, se = NA, df = NA, p = NA, group = "")
  data.frame(kind = kind, group = group, name = name, value = value, se = se, df = df, p = p)
for (i in seq_len(nrow(manifest))) {
  case <- manifest[i, ]
  d <- read.csv(case$data, stringsAsFactors = FALSE, colClasses = c(participant = "character"))
  for (column in names(d)) if (is.character(d[[column]])) d[[column]] <- factor(d[[column]])
  levels <- strsplit(case$levels, "|", fixed = TRUE)[[1]]; names <- strsplit(case$names, "|", fixed = TRUE)[[1]]
  k <- length(levels)
  d[[case$factor]] <- factor(as.character(d[[case$factor]]), levels = levels)
  C <- switch(case$coding, treatment = contr.treatment(k), sum = contr.sum(k), helmert = contr.helmert(k))
  colnames(C) <- sub(paste0("^", case$factor), "", names)
  contrasts(d[[case$factor]]) <- C
  f <- as.formula(case$formula)
  m <- lmer(f, data = d, REML = TRUE)
  s <- coef(summary(m))
  out <- row("fixed", rownames(s), s[, "Estimate"], s[, "Std. Error"], s[, "df"], s[, "Pr(>|t|)"])
  out <- rbind(out, row("scalar", c("REMLcrit", "singular"), c(REMLcrit(m), isSingular(m))))
  vc <- as.data.frame(VarCorr(m)); vc <- vc[is.na(vc$var2), ]
  out <- rbind(out, row("variance", ifelse(is.na(vc$var1), "", vc$var1), vc$vcov,
                        group = sub("\\.[0-9]+$", "", vc$grp)))
  full <- lmer(f, data = d, REML = FALSE)
  for (term in drop.scope(terms(nobars(f)))) {
    reduced <- update(full, as.formula(paste(". ~ . -", term)))
    a <- anova(reduced, full)
    out <- rbind(out, row("lrt", term, a$Chisq[2], df = a$Df[2], p = a[["Pr(>Chisq)"]][2]))
  }
  columns <- paste0(case$factor, colnames(C))
  pairs <- NULL
  for (a in 1:(k - 1)) for (b in (a + 1):k) {
    L <- setNames(rep(0, length(fixef(m))), names(fixef(m)))
    L[columns] <- C[a, ] - C[b, ]
    r <- contest1D(m, L)
    label <- paste0(case$factor, levels[a], " - ", case$factor, levels[b])
    pairs <- rbind(pairs, row("pair", label, r$Estimate, r[["Std. Error"]], r$df, r[["Pr(>|t|)"]]))
  }
  out <- rbind(out, pairs, row("holm", pairs$name, p.adjust(pairs$p, "holm")))
  write.csv(out, case$out, row.names = FALSE)
}
