# stan_compare.R: the rstan half of tools/bench/stan_compare.py (which calls it; see there).
#
# Rscript stan_compare.R MODEL.stan DATA.R CHAINS WARMUP SAMPLES SEED PARS OUTDIR
#
# Compiles MODEL.stan, samples CHAINS chains one after the other on one core (cores = 1), and
# writes OUTDIR/stats.txt ("key value" lines: compile and sampling times, leapfrog counts,
# divergences, rstan::ess_bulk of each parameter) and OUTDIR/draws.csv (the post-warm-up draws
# of the comma-separated parameters PARS, one row per draw, the chain first). DATA.R is in
# rstan's dump format (jsonlite is not a dependency of Debian's r-cran-rstan).
suppressPackageStartupMessages(library(rstan))
args <- commandArgs(trailingOnly = TRUE)
model_file <- args[1]; data_file <- args[2]
chains <- as.integer(args[3]); warmup <- as.integer(args[4]); samples <- as.integer(args[5])
seed <- as.integer(args[6]); pars <- strsplit(args[7], ",")[[1]]; outdir <- args[8]
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)
# Debian's r-cran-bh is an empty package whose headers are libboost-dev's, in /usr/include
if (!file.exists(rstan_options("boost_lib")) && file.exists("/usr/include/boost"))
  rstan_options(boost_lib = "/usr/include")

t0 <- proc.time()[["elapsed"]]
sm <- stan_model(file = model_file, verbose = FALSE)
compile_s <- proc.time()[["elapsed"]] - t0

data <- read_rdump(data_file)
t1 <- proc.time()[["elapsed"]]
fit <- sampling(sm, data = data, chains = chains, iter = warmup + samples, warmup = warmup,
                seed = seed, cores = 1, refresh = 0)
wall_s <- proc.time()[["elapsed"]] - t1

el <- get_elapsed_time(fit)
sp_all <- get_sampler_params(fit, inc_warmup = TRUE)
lf_warmup <- sum(sapply(sp_all, function(s) sum(s[seq_len(warmup), "n_leapfrog__"])))
lf_sample <- sum(sapply(sp_all, function(s) sum(s[warmup + seq_len(samples), "n_leapfrog__"])))
div <- sum(sapply(sp_all, function(s) sum(s[warmup + seq_len(samples), "divergent__"])))

a <- as.array(fit, pars = pars)  # iterations x chains x parameters
out <- c(sprintf("compile_s %.6f", compile_s), sprintf("wall_s %.6f", wall_s),
         sprintf("elapsed_warmup_s %.6f", sum(el[, "warmup"])),
         sprintf("elapsed_sample_s %.6f", sum(el[, "sample"])),
         sprintf("leapfrogs_warmup %d", as.integer(lf_warmup)),
         sprintf("leapfrogs_sample %d", as.integer(lf_sample)),
         sprintf("divergent %d", as.integer(div)),
         sprintf("rstan_version %s", as.character(packageVersion("rstan"))),
         sprintf("stan_version %s", stan_version()))
for (p in dimnames(a)[[3]]) out <- c(out, sprintf("ess_bulk[%s] %.6f", p, ess_bulk(a[, , p])))
writeLines(out, file.path(outdir, "stats.txt"))

rows <- do.call(rbind, lapply(seq_len(chains), function(c) cbind(chain = c, a[, c, ])))
colnames(rows) <- c("chain", dimnames(a)[[3]])
write.csv(rows, file.path(outdir, "draws.csv"), row.names = FALSE)
