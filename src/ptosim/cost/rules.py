"""Every PyPTO behaviour the cost model reproduces, as a record: what PyPTO does, which kernel it
was read from, what its SIM showed, and the test that pins it.

The cost code names the rule each of its decisions applies: ``fire(rule_id)`` (a ``fired.Fired``) records
that an estimate applied it, once per decision, never per tile op; ``Estimate.rules_fired`` lists
them in this table's order. A rule here that no cost module fires is dead (tests/ptosim/test_rules.py).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Rule", "RULES", "BY_ID"]


@dataclass(frozen=True)
class Rule:
    id: str  #: short kebab-case name, e.g. ``vec-nbuffer-merge``
    statement: str  #: what PyPTO does, in terms of its ops, tasks and passes
    read_from: str  #: the kernel (and case) it was read from
    measured: str  #: what PyPTO's SIM (swimlane, task topology, AICPU trace) showed
    test: str  #: the pytest node id that pins it
    pypto: str = "0.2.0"  #: the PyPTO version it was read from


_COST = "tests/ptosim/test_cost.py::"
_RULES = "tests/ptosim/test_rules.py::"

RULES: tuple[Rule, ...] = (
    # --- latency ---------------------------------------------------------------------------------
    Rule("tileop-level1-latency",
         "A tile op costs PyPTO's level-1 fit cnt * (int((a * bytes * r * 1e-6 + b) * freq_trans) + 1) in single "
         "precision, +1400 for COPY_IN and +300 for COPY_OUT; ops without an (a, b) pair use the level-0 formula",
         "RMSNorm + linear, K=4096 N=1536 (PipeSimulatorFast::PostSimulate)",
         "COPY_IN of a [128, 512] BF16 block of a [1536, 4096] weight 2775 cycles; [4, 4096] FP32 MUL 458, CAST 271",
         _COST + "test_tileop_latency_is_pyptos_level1_fit"),
    Rule("tile-op-issue-gap",
         "Inside a task each pipe issues its tile ops in order, an op starting 2 cycles after both its pipe is free "
         "and its inputs are ready (idle gaps filled across the subgraphs of a merged task); the task ends 1 cycle after its last op",
         "RMSNorm + linear, K=4096 N=1536, T=16",
         "the 2-cycle issue gap and the 1-cycle tail in the pipe swimlane; AIC tasks 36396 cycles, AIV 5029 and 3105",
         _COST + "test_task_durations_match_pypto_swimlane"),
    Rule("l2-off-in-sim",
         "PyPTO's SIM runs without its L2 model (mteUseL2Cache = 0), so the level-1 copy time is the hit path; "
         "with the model on (20 MiB LRU per device task) a missing COPY_IN adds 150 cycles",
         "online flash attention over a paged KV cache, q·kᵀ",
         "a first COPY_IN of a block costs 1411 cycles in the SIM, not 1411 + the miss latency",
         _COST + "test_cacheable_weight_is_reread_from_l2"),
    Rule("none-cacheable-bypasses-l2",
         "A NONE_CACHEABLE tensor always misses L2 and never occupies it, so it evicts nothing",
         "PyPTO's cache model (config/CacheConfig.toml), two weights streamed every root",
         "not measured in the SIM (it runs without L2)",
         _COST + "test_none_cacheable_does_not_evict_other_tensors"),
    # --- which tasks -------------------------------------------------------------------------------
    Rule("vec-task-per-row-block",
         "A group of fused vector ops runs as one AIV task per row block of its coarsest row tile: copy-ins of the "
         "operands it does not make, its tile ops, copy-outs of what another task or the kernel needs",
         "RMSNorm + linear, K=4096 N=1536, T=16, [4, 4096] norm tiles",
         "AIV task durations 5029 and 3105 cycles (the two parts of the split norm), as the pipe swimlane",
         _COST + "test_task_durations_match_pypto_swimlane"),
    Rule("vec-task-per-column-tile",
         "A vector group whose ops are all elementwise on one column tiling narrower than the tensor's last axis "
         "runs one AIV task per (row block, column tile): the tile ops of different column tiles share no data. "
         "Each task copies in and out its column slice only and waits for the tasks that wrote those columns. "
         "An op on another column tiling than its producer's (one of them in several column tiles, neither a "
         "per-row value) starts a new group. vec_nbuffer_setting merges the column tasks n at a time when they "
         "meet a shared task: a matmul reading them, or a vector task of whole rows feeding or reading them; "
         "not when each reads its own cube task and feeds only the output. Only the -1 key of the setting was "
         "seen to reach them, not their hash order's. The UB split is judged on one column tile. A row "
         "reduction over several column tiles joins them (column-reduce-through-gm)",
         "RMSNorm + linear with a bias epilogue (add, cast), unroll 1, K=256 N=512, T=1; SwiGLU FFN H=256 "
         "I=512 (neg, exp, add, div, mul, cast on the [1, 512] gate and up results), vec tile [64, 128], float "
         "and W8A8 (dequant and requant on [8, 512] tiles around the act)",
         "epilogue: 1 task of 1.82 us with vec tile [8, 512], 4 of 1.79 us with [64, 128] (vec_nbuffer {0: 2} "
         "left them); FFN act: 4 tasks with vec_nbuffer {-1: 1}, 2 with {-1: 2} (also {-1: 2, 0: 4}), 1 with "
         "{-1: 4}; cast(mul(g, u)) or cast(g) alone still 2 under {-1: 2}; W8A8 FFN act 2 tasks between 1 "
         "dequant and 1 requant task at T=1; Qwen3 FFN (H=2048, I=6144) 24 act tasks of 3.35 us at T=1, 48 of "
         "3.5-4.4 us at T=16/128 (no UB split)",
         "tests/ptosim/test_cost_columns.py::test_elementwise_vector_group_runs_per_column_tile"),
    Rule("cube-task-per-output-tile",
         "A matmul runs as one AIC task per mL0 x nL0 output tile, the K loop inside: per kL1 chunk a COPY_IN of "
         "the A and B blocks, per kL0 step L1->L0A, L1->L0B and A_MUL_B / A_MULACC_B, one COPY_OUT of L0C",
         "RMSNorm + linear, K=4096 N=1536, T=16",
         "every AIC task 36396 cycles (12 of them), as the pipe swimlane",
         _COST + "test_task_durations_match_pypto_swimlane"),
    Rule("cube-bias-per-output-tile",
         "A matmul with a bias_tensor copies, per output tile, the bias's [1, nL0] slice into L1 (MTE_IN, after "
         "the tile's first A and B blocks) and moves it to the bias table (L1_TO_BT, MTE1); the tile's first A_MUL_B reads it",
         "SwiGLU FFN with gate and up biases, H=256 I=512, T=1 (gate and up tiles merged by cube_l1_reuse 2)",
         "per task of two [16, 128] tiles: 2 COPY_IN [1, 128] FP32 of 1411 cycles and 2 L1_TO_BT of 13 cycles; "
         "gate_up tasks 4.97 us (3.7 us without the bias)",
         "tests/ptosim/test_cost_columns.py::test_a_matmul_bias_is_copied_in_per_output_tile"),
    Rule("vec-fuse-same-grid-and-stage",
         "Vector ops fuse producer -> consumer into one task when they share a row-tile grid and the number of "
         "matmuls on their way (an op needing a matmul's result starts a new task)",
         "online flash attention over a paged KV cache",
         "a later block's rescale with o·α, P·V, then + P·V: three tasks; the last block's + P·V, o / l and cast one",
         _COST + "test_online_softmax_task_graph_is_pyptos"),
    Rule("vec-fuse-whole-blocks",
         "Vector ops on different row tiles share a task when each is one row block or one's blocks are whole "
         "blocks of the other's; the finer op runs once per row sub-block inside the task",
         "RMSNorm ([4, K] tiles) + INT8 activation quant ([8, K] tiles) + linear, T=128",
         "16 tasks of two norm tiles and one quant tile, not 32 + 16",
         _COST + "test_a_consumer_on_whole_blocks_of_its_producer_shares_its_task"),
    Rule("constant-joins-reader",
         "A vector op that reads nothing (full, zeros) sits at no matmul depth and is filled in its reader's task",
         "MLA prolog with INT8 activation quant after a projection (127 / amax), T=1",
         "19 AIV tasks (ptosim had two more, one per constant)",
         _COST + "test_a_constant_joins_its_reader_after_a_matmul"),
    Rule("two-argument-reads-alone",
         "An op joining the reads of two kernel arguments leaves each read (and its cast) a task of its own",
         "fused pre-attention's residual add, x + residual cast to FP32, T=4",
         "8 [1, 256] FP32 cast tasks at T=4; the add and the norm after it one task",
         _COST + "test_casts_of_two_arguments_joined_by_an_op_are_tasks_of_their_own"),
    Rule("strided-view-op-alone",
         "A vector op on a strided view (one element of every row), or a product of part of a row by an operand "
         "broadcast over a middle dim, runs as a task of its own; its consumers start the next task",
         "RoPE on interleaved pairs in the MLA prolog, T=4",
         "4 + 1 tasks per root and rotation (x1·cos, x2·sin, x2·cos, x1·sin, then both halves)",
         _COST + "test_rope_pairs_task_graph_is_pyptos"),
    Rule("column-broadcast-joins",
         "A [rows, 1] column view of a vector result broadcast along the rows of a wider operand is no strided op: "
         "the op joins its producer's task like any per-row operand",
         "MoE block (16 experts, router softmax, T=1 and 16): each expert's [T, H] output times its routing column, "
         "summed into one FP32 buffer",
         "the 16 weighted sums and the router's vector ops in 1 AIV task (66 tasks in all, 17 with the op alone)",
         _COST + "test_column_broadcast_joins_its_producer"),
    Rule("assembled-pieces-share-task",
         "Two results assembled into one named tensor the root reads again (or that holds pieces joined that "
         "way) are one task; pieces only assembled out stay tasks of their own",
         "RoPE halves assembled into the pairs; fused pre-attention's K halves into k_tmp and Q halves into q_tmp, T=16",
         "Q's halves two tasks of 1.79 us each; K's halves and the cache scatters one task per token",
         _COST + "test_cache_scatters_of_one_slot_copy_share_a_task_and_chain_token_to_token"),
    Rule("reshaped-slice-joins-producer",
         "A column view of a vector result, reshaped (one row per head), stays in the producer's task",
         "fused pre-attention with a vector epilogue on the QKV projection (INT8 dequant, or a bias), q and k norms",
         "epilogue, q norm and k norm one task per token: 5.87 us (INT8 dequant) and 5.09 us (bias) at T=1; "
         "the same task counts at T = 1, 4, 16, 128",
         _COST + "test_slices_of_a_vector_result_reshaped_for_a_norm_share_its_task"),
    Rule("argument-copy-readers-share-task",
         "The readers of one copying reshape of a kernel argument's view (kept in UB) share a task",
         "fused pre-attention's K and V cache scatters at a copy of the token's slot_mapping row",
         "one cache-write task per token, 6.28 us",
         _COST + "test_cache_scatters_of_one_slot_copy_share_a_task_and_chain_token_to_token"),
    Rule("reshape-task-of-multi-block-result",
         "A reshape of a vector result made in more than one row block is a copy task of its own (PIPE_S RESHAPE "
         "between a copy-in and a copy-out) when it changes the rank of a result then assembled or viewed, or "
         "copies a view of such a result; in one row block the producer's task does it",
         "MLA prolog, T=16: the heads' [T*NH, D] -> [T, NH, D] split and the rotated part's pairs; T=4 for one block",
         "a reshape task each at T=16; none at T=4",
         _COST + "test_reshapes_of_a_multi_block_result_are_tasks"),
    Rule("reshape-task-in-unrolled-root",
         "A copying reshape of a view of a result made in one row block is still a task of its own when the root "
         "is an unrolled one of several tokens",
         "MLA prolog's kv pairs, T=16 with unroll 8 ([8, 64] in one tile)",
         "a 1.08 us reshape task; 52 tasks (ptosim had 50); a one-token root leaves it to the norm's task",
         _COST + "test_a_copying_reshape_of_a_slice_in_an_unrolled_root_is_a_task"),
    Rule("copied-view-task",
         "A view of a kernel argument reshaped in place, read only by a later root (a nested loop's body), is "
         "copied in a task of its own (REGISTER_COPY under the vec tile), named after the reshape; a view its own "
         "root reads is the reader's operand, no task",
         "online flash attention (query rows of q reshaped to [T*NQ, D], viewed per kv head, read in the kv "
         "loop); single-pass attention and a paged attention whose kv loop views the rows itself",
         "one 0.96 us copy per (token, kv head) ahead of the kv loop; none in single-pass attention (S=256 T=1: "
         "10 tasks, ptosim had 12) nor in the paged kernel (44 tasks, 56.74 us; ptosim 44, 56.55)",
         _COST + "test_online_softmax_task_graph_is_pyptos"),
    Rule("copied-assemble-per-head",
         "An assemble into a named buffer of a copying reshape's result is copied in tasks of their own, one per "
         "index of the source's middle dims, between the producer and the buffer's reader",
         "fused pre-attention's v: reshape(qkv[:, K+N:], [T, NKV, D]) into v_tmp, 2 KV heads",
         "2 copy tasks per root of 0.96 us each at T=1, also per four-token root (unroll 4: 2, not 8)",
         _COST + "test_a_copying_reshape_assembled_into_a_buffer_is_copied_per_head"),
    Rule("scatter-writes-gm",
         "scatter_update lowers to INDEX_OUTCAST, which writes its rows to GM from UB: no COPY_OUT follows",
         "fused pre-attention's cache-write task",
         "6.28 us per task (ptosim's had a 0.17 us COPY_OUT per scatter, x1.12 of PyPTO at T=128)",
         _COST + "test_a_scatter_writes_the_cache_itself"),
    # --- splits and merges ------------------------------------------------------------------------
    Rule("vec-split-over-ub",
         "A vector subgraph whose summed UB buffers exceed the limit is split, by peeling ops off its end, only "
         "when a matmul with N >= 1024 reads its result as the A operand",
         "RMSNorm + linear, K=4096 N=1536, T=16, [4, 4096] norm tiles",
         "split before the final cast (AIV parts 5029 and 3105 cycles); K=1024/2048 tiles stay one task; "
         "N=1024 splits, N=896 does not, for 128- and 256-wide cube tiles alike",
         _COST + "test_task_durations_match_pypto_swimlane"),
    Rule("vec-nbuffer-merge",
         "vec_nbuffer_setting merges N row blocks of a vector group into one task (a shared block copied in once), "
         "from groups of 2 row blocks up",
         "RMSNorm + linear, K=512, T=128, unroll 64, one-row norm tiles",
         "43.7 / 25.6 / 31.2 us for unset / {-1: 4} / {-1: 8}; at unroll 16 T=16, 4 norm row blocks -> 2 tasks",
         _COST + "test_vec_nbuffer_merges_tiny_vector_tasks"),
    Rule("vec-hash-order-from-end",
         "vec_nbuffer_setting's hash orders number a root's vector groups from its end; the parts of a UB-split group share one number",
         "RMSNorm + linear with a bias epilogue, T=128",
         "{0: 2} merges the epilogue (8 tasks, the norm 32); {1: 2} the norm (16 tasks, the epilogue 16)",
         _COST + "test_vec_nbuffer_hash_orders_count_from_the_end_of_the_root"),
    Rule("vec-hash-order-viewed-a-first",
         "A vector group whose result the root's matmuls read through a view (the K-split's halves of one norm) takes "
         "vec_nbuffer_setting's first hash order; the root's other vector groups follow, numbered from its end",
         "K-split linear, K=256 N=128 (one n tile per half), {0: 2}, T=16 and 128 (NBufferMerge's hash-order log)",
         "order 0 the norm, then the matmuls, the epilogue last: norm 4 -> 2 and 32 -> 16 tasks, epilogue 2 and 16 unmerged",
         "tests/output/test_l1_reuse_rules.py::test_k_split_k256_norm_takes_hash_order_0"),
    Rule("vec-merge-needs-shared-neighbour",
         "The n-buffer merge (NBufferMerge) merges a vector group's instances N at a time only among instances "
         "that share a neighbour subgraph: it maps each producer subgraph to the instances it feeds, and each "
         "consumer to the instances feeding it, takes the map with fewer entries (inputs on a tie) and merges "
         "consecutive instances of each entry; an instance with no neighbour on that side is never merged",
         "RMSNorm + INT8 linear with a dequant epilogue reading the norm's per-row scale, T=128; the INT8 FFN "
         "(H=256, I=512) at T=128 with {-1: 2, 0: 4}",
         "RMSNorm + INT8 linear: {0: 2}, {1: 2} and {2: 2} left all 35 tasks as they were; FFN INT8: dequant 32 -> 16, "
         "act 8 -> 4, down_quant 16 -> 8, act_quant and epilogue (no producer / no consumer subgraph) 16: 70 "
         "tasks (ptosim 98 before this rule, 70 with it); a [4, 1024] norm feeding 4 n tiles left unmerged, "
         "a [4, 256] one feeding 1 merged",
         _COST + "test_vec_nbuffer_merges_only_instances_sharing_a_neighbour"),
    Rule("vec-merge-across-same-hash",
         "The n-buffer merge groups a root's vector subgraph instances by hash (their tile ops and the ops "
         "feeding them), not by the op that made them: instances of two vector groups with the same ops, "
         "shapes and tiles fed alike (one per unrolled expert, a gate and an up dequant) merge with each other",
         "MoE with INT8 experts (16 experts, {-1: 4}) at T=4; the INT8 FFN at T=128",
         "MoE INT8: the 16 per-expert dequant/act/quant tasks (each 1 row block) ran as 4 tasks of 4 "
         "(76 tasks; ptosim 90 when each expert's group merged alone)",
         _COST + "test_vec_nbuffer_merges_instances_of_one_hash_across_groups"),
    Rule("l1-reuse-auto",
         "With no cube_l1_reuse_setting for a matmul, PyPTO merges its output tiles itself: floor(tiles / (2 x "
         "AIC cores)) per task, along the shared block; cube_nbuffer_setting then merges those of one size",
         "single-pass attention, 16384 keys in 64-key tiles (256 q.k^T tiles per head), cube_nbuffer {-1: 2}",
         "64 tasks at T=1 (PyPTO's source: numLR = subgraphs / 48 on 24 AIC cores, 5 here; 27 AIC tasks "
         "per head after the n-buffer pairs); ptosim 262 before the rule",
         _COST + "test_cube_l1_reuse_merges_by_itself_when_unset"),
    Rule("l1-reuse-along-m",
         "cube_l1_reuse_setting merges N output tiles that share the B (weight) block, along m, into one task",
         "RMSNorm + linear, four 16-row m tiles per weight block",
         "96 -> 48 AIC tasks at T=128 from unroll 16 to 64 with {-1: 2} (no figure of the merge alone recorded)",
         _COST + "test_cube_l1_reuse_saves_copy_ins"),
    Rule("l1-reuse-along-n-static-rows",
         "A matmul with one row tile at compile time too (rows not scaled by a token-loop unroll) whose A is read "
         "from GM merges its output tiles along n under cube_l1_reuse_setting: they share the A block; an A that a "
         "vector task of the same root hands on does not merge",
         "fused pre-attention's phase-2 q·kᵀ, n = 2 x 64, T=1; RMSNorm + linear at unroll 1, K=256 N=512; the MoE "
         "block at unroll 1 (each expert's down projection)",
         "16 q·kᵀ tasks with cube_l1_reuse 2, 32 without; the linear at unroll 1 on the norm's result: 4 tasks "
         "(11.61 us), on the token row x itself: 2 (3.84 us), also at K = 1024, 4096 and 16384 (8.79, 32.56, "
         "134.69 us each: no L1 limit); the MoE's expert down projections 32 for 16 experts",
         _COST + "test_l1_reuse_merges_along_n_when_rows_are_static"),
    Rule("l1-reuse-shared-a",
         "Under cube_l1_reuse_setting, matmuls of one root that read the same float A block with the same shapes (one "
         "row tile) merge across ops, output tile by output tile: an FFN's gate and up projections run as one AIC task "
         "per pair; INT8 ones do not",
         "FFN (SwiGLU, H=256, I=512, T=1 and 16) and an MoE block's per-expert gate and up (16 experts, I=128)",
         "FFN gate_up 4 AIC tasks at T=1 (8 tiles), 8 at T=16; MoE expert_up 16 for 16 experts; the router "
         "(other n tiles) stays a task of its own; the INT8 W8A8 FFN's gate_up 8 for 8 tiles",
         _COST + "test_shared_a_matmuls_merge_across_ops"),
    Rule("l1-hash-classes",
         "The L1-reuse pass hashes a cube subgraph by its tile ops and, recursively, their inputs' and numbers the "
         "classes by first appearance: a root's matmuls of one structure share a key; a key past the last is ignored",
         "K-split linear (two accumulating halves), K=7168 N=1536 (l1_copy_reuse.cpp GetColorHash, SetNumLR)",
         "both halves 'Hash order: 0' on every path; {-1: 2, 1: 1}: 'Invalid subgraph ID: 1 ... ignored', pairs merged",
         "tests/output/test_l1_reuse_rules.py::test_k_split_halves_are_one_l1_class"),
    Rule("l1-reuse-shared-view-a",
         "A matmul reading A through a view of a vector result made in more than one row block merges its output tiles "
         "along n under cube_l1_reuse_setting (the view is assembled once into GM; read straight from the vector result "
         "each cube tile gets a buffer of its own, from one row block each copy-in a staging buffer); with a single n "
         "tile there is no n neighbour, and its m tiles pair through the shared B block instead",
         "K-split linear, K=7168 N=1536 and K=256 N=128, T=1/4/16/128; the unsplit linear K=4096 N=1536 at T=16/128",
         "K-split AIC tasks 24/96/12/48 at T=1/4/16/128 (adjacent n tiles of a half paired); at K=256 N=128 (one n tile "
         "per half) 2 at T=16, 4 of 8 at T=128 (m tiles paired); unsplit 12 at T=16, 24 at T=128 (m pairs)",
         "tests/output/test_l1_reuse_rules.py::test_a_through_a_view_of_a_multi_block_result_pairs_n_tiles"),
    Rule("l1-keeps-first-and-last-blocks",
         "In a merged cube task a repeated GM block comes from L1 only if it is among the first cap - 1 distinct "
         "blocks of its operand or the most recent one (cap: how many fit L1 beside the other operand's)",
         "RMSNorm + linear under cube_l1_reuse_setting",
         "with 128 KiB weight blocks, 3 of 8 are reused",
         _COST + "test_cube_l1_reuse_saves_copy_ins"),
    Rule("cube-nbuffer-merge",
         "cube_nbuffer_setting merges N cube tasks (after the L1 reuse) into one",
         "RMSNorm + linear, K=4096 N=1536, T=64",
         "{-1: 2} 90.7 us, {-1: 4} 82.7 us, {-1: 8} 129.8 us (too few tasks)",
         _COST + "test_cube_nbuffer_trades_dispatches_for_parallelism"),
    Rule("split-k-partials-summed-on-aiv",
         "With enable_split_k a matmul runs one cube unit per output tile and kL1 chunk (the K loop of that chunk, "
         "its FP32 partial copied out to a GM workspace), cube_nbuffer_setting merging consecutive units and L1 "
         "reuse none; one AIV task per output tile then copies in every partial, one after another, adds them in "
         "an ADD chain and copies the sum out to the output",
         "RMSNorm + linear with split-K cube tiles [16, 16], [256, 1024], [128, 128], K=28672 N=24, FP32 out, n-buffer 4, T=1/4/16/128",
         "per root 7 AIC tasks of 4 chunks (15162-16381 cycles each: per chunk COPY_IN A [16, 1024] and B [1024, 24], "
         "4 kL0 steps, COPY_OUT [16, 24] 325) and 1 AIV task of 28 COPY_INs [16, 24] FP32 (1421 each), 27 ADDs (53), "
         "a COPY_OUT (325): 39776 cycles at T=1, 40229 at T=16, waiting for all 7",
         _COST + "test_split_k_matmul_sums_its_partials_on_aiv"),
    Rule("column-reduce-through-gm",
         "A vector subgraph whose one row reduction (sum) spans more than one column tile is a chain of tasks "
         "through GM, per row block: one task per column tile for the ops whose result is read again after the "
         "sum (a CAST to FP32), each copying its tile out; the column tiles in two halves, each summed by PAIRSUMs "
         "into partial tiles in a workspace; a last task that PAIRSUMs what is left, ROWSUMs it and runs the ops "
         "after the sum, copying the row's tiles back in. While three FP32 tiles of the reduction fit the UB, a "
         "half is one task (its leaf ops, e.g. the square, and its PAIRSUMs); else each leaf tile is a task and "
         "each three partial inputs a task of two PAIRSUMs. vec_nbuffer_setting merges, n at a time, the tasks "
         "of one stage that feed the same tasks, unless one feeds a task no other of its stage feeds",
         "RMSNorm (no gamma) + split-K linear, K=28672 N=24, vec tile [8, 2048] (14 column tiles), FP32 out, "
         "n-buffer 4, T=1/4/16/128; T=16 with n-buffer 1 and vec tiles [2|4, 2048], [8, 1024], [8, 1792], [4, 4096]",
         "T=1: 4 cast tasks (4/4/4/2 tiles: COPY_IN 1448, CAST 47, COPY_OUT 412 each), 1 task of 14 COPY_IN + "
         "MUL (83) and 12 PAIRSUMs (642) to 2 partials, 1 task of PAIRSUM, ROWSUM_SINGLE, the scalars and 14 "
         "MUL + CAST + COPY_OUT (13.5 us); T=16: per row block 14 cast tasks, 14 square tasks merged 3/3/3/3/1/1, "
         "6 PAIRSUM tasks (3 inputs, 2 PAIRSUMs at 5134) merged in pairs, 1 last task: 51 AIV tasks per root",
         _COST + "test_column_reduce_runs_through_gm"),
    # --- dependencies and sync tasks -----------------------------------------------------------------
    Rule("write-supersedes-covered-write",
         "A write covering an earlier write its task waits for stands for it: later readers wait for the later writer alone",
         "fused pre-attention's per-token KV cache scatters, T=16",
         "3 successors per scatter task, 159 for the last; the attention waits for the last scatter only",
         _COST + "test_cache_scatters_of_one_slot_copy_share_a_task_and_chain_token_to_token"),
    Rule("buffer-read-waits-root-writers",
         "A named buffer read in a later root is waited for as that root's output: the reader waits for every "
         "task of the writing root that writes an assembled tensor",
         "online flash attention over a paged KV cache",
         "the next block's rescale starts after the previous block's o update, though it reads only m and l",
         _COST + "test_online_softmax_task_graph_is_pyptos"),
    Rule("later-listed-writer-edge",
         "A task holding ops from both sides of another task's ops in program order waits for that later-listed writer of its root",
         "fused pre-attention's K RoPE, T=16",
         "the last RoPE task (the sub, then the add) waits for all four products, in the task topology",
         _COST + "test_rope_pairs_task_graph_is_pyptos"),
    Rule("sync-join-from-three",
         "The tasks of a group wait through one sync (HUB) task for the 3 or more tasks they all wait for, each "
         "keeping its other predecessors, and members left with the same 3 or more predecessors through another; "
         "groups of a root that wait for the same tasks share the sync task; with 2 producers every consumer "
         "waits on both directly",
         "PyPTO's task topology; the INT8 FFN (H=256, I=512) at T=128",
         "FFN INT8: one sync task between the 16 quant tasks and the 8 gate/up tiles of two matmuls, one between "
         "those tiles and the dequant tasks (each also waiting for its own quant task): e2e x1.21 -> x1.09",
         _COST + "test_a_join_waits_through_one_sync_task_for_what_a_group_shares"),
    Rule("root-start-sync",
         "3 or more readers of a root's views wait for a root-start sync task, whose successors are only the "
         "readers no other reader leads to",
         "MLA prolog, T=1",
         "the root-start sync task has 7 successors, the tasks with no other predecessor",
         _COST + "test_a_root_start_sync_task_precedes_only_the_readers_nothing_else_leads_to"),
    Rule("root-end-sync",
         "The tasks of a root that write its assembles feed a root-end sync task",
         "PyPTO's task topology (the kernel was not recorded)",
         "seen in the task topology (no figure recorded)",
         _RULES + "test_the_writers_of_a_roots_assembles_feed_an_end_sync_task"),
    Rule("reshape-root-sync",
         "A root of views and reshapes only has no task but a sync task ahead of the tasks of later roots that "
         "read what it made",
         "online flash attention: the per-sequence reshape of q, T=16",
         "16 sequence sync tasks of 2 query copies each",
         _COST + "test_a_root_of_reshapes_only_is_a_sync_task_ahead_of_its_readers"),
    Rule("submit-before-loop-device-task",
         "A loop with submit_before_loop=True submits what ran before it as a device task of its own",
         "PyPTO's runtime option semantics (no kernel recorded)",
         "not measured",
         _RULES + "test_a_loop_submitted_before_starts_a_device_task"),
    Rule("device-task-stitch",
         "Roots are stitched stitch_function_max_num at a time into device tasks that run one after the other, "
         "the next submitted 200 cycles after the previous one's last completion",
         "RMSNorm + linear, T=64",
         "298 us with stitch_function_max_num=1 vs 115 us with 16; 200 cycles in the AICPU trace between device tasks",
         _COST + "test_stitch_function_max_num"),
    # --- scheduling -----------------------------------------------------------------------------------
    Rule("aicpu-schedulers",
         "On A2/A3, 6 AICPU scheduler threads each own an equal share of the AIC and AIV cores and loop: poll each core "
         "(240 cycles), resolve each successor of a finished task (390 cycles), dispatch a ready task (200 cycles)",
         "PyPTO's AICPU model (machine/AICPUMachine.cpp, config/AICPUConfig.toml)",
         "the configured costs: aicpuMachineNumber 6, completion 240, resolve 390, scheduler 200 cycles",
         _COST + "test_cost_coefficients_are_profile_data"),
    Rule("sync-task-costs-nothing",
         "A sync (HUB) task is processed by a dispatching AICPU thread at no cost, its successors resolved on the spot",
         "PyPTO's AICPU model",
         "the merged swimlane draws sync tasks as 1 us fake tasks in later device tasks; the cost model runs them in 1 cycle",
         _RULES + "test_sync_tasks_take_no_time"),
    Rule("ready-in-task-id-order",
         "A device task's tasks with no predecessor enter the ready queues in task-id order (root << 20 | index): "
         "the sync task of a root of reshapes only, with every later root's first tasks as successors, is "
         "processed before their per-root sync tasks, so each of those releases its few tasks at once",
         "single-pass attention, NQ16 NKV8 D128 S1024, T=4 (DeviceMachine::SubmitDeviceTask walks its task map)",
         "all 256 q·kᵀ tasks dispatched before the first P·V (92.6 us); ptosim released them 390 cycles apart "
         "behind the big sync task and ran P·V from 25 us: 152.4 us against PyPTO's 181.6",
         _RULES + "test_ready_tasks_enter_in_task_id_order"),
    Rule("resolve-end-is-a-step",
         "An AICPU poll that resolves a finished task asks for a device step when its first resolve ends; a "
         "ready task reaches the global queue at a step",
         "RMSNorm + linear, T=4: norm -> matmul, four times",
         "the matmuls started at 3.20, 4.51, 4.62 and 4.73 us",
         _COST + "test_a_resolve_end_is_a_scheduler_step"),
    Rule("one-next-cycle",
         "The device keeps a single next step: a step asked for at a poll is lost if another comes first, and a "
         "quiet device then waits for the next scheduler event",
         "RMSNorm + linear, T=1: gamma prep -> norm -> matmul",
         "the three tasks started at 0, 3.20 and 8.33 us",
         _COST + "test_a_step_asked_for_at_a_poll_is_lost_to_an_earlier_one"),
    Rule("task-start-steps",
         "A core starting a task steps the device once per tile op on consecutive cycles as it allocates and "
         "issues them",
         "MLA prolog, T=1",
         "5 tasks moved to the global queue within 3 cycles of an AIC task's start; the sync task's 7 successors "
         "started 0.11 us apart",
         _COST + "test_a_task_start_steps_the_device_once_per_tile_op"),
)

BY_ID: dict[str, Rule] = {r.id: r for r in RULES}
