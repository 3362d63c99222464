//===- TrainAttrs.td - dstrain attributes and enums --------*- tablegen -*-===//
#ifndef DSTRAIN_ATTRS
#define DSTRAIN_ATTRS

include "dstrain/TrainBase.td"

def Train_WarmupType : I32EnumAttr<"WarmupType",
    "how the learning rate rises during warmup", [
  I32EnumAttrCase<"log", 0>, I32EnumAttrCase<"linear", 1>
]> {
  let cppNamespace = "::mlir::ds::train";
  let genSpecializedAttr = 0;
}

def Train_WarmupTypeParameter : EnumParameter<Train_WarmupType> {
  let defaultValue = "::mlir::ds::train::WarmupType::log";
}

// A double stored as APFloat (hashable), written as a plain float literal.
class Train_F64Param<string desc>
    : AttrOrTypeParameter<"::llvm::APFloat", desc> {
  let comparator = "$_lhs.bitwiseIsEqual($_rhs)";
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double v;
    if (::mlir::failed($_parser.parseFloat(v)))
      return ::mlir::failure();
    return ::llvm::APFloat(v);
  }() }];
  let printer = [{ $_printer.printFloat($_self) }];
}
class Train_F64Parameter<string desc, string default> : Train_F64Param<desc> {
  let defaultValue = "::llvm::APFloat(" # default # ")";
}

class Train_I64Parameter<string desc, string default>
    : AttrOrTypeParameter<"int64_t", desc> {
  let defaultValue = default;
}

// The schedules are DeepSpeed's (deepspeed.runtime.lr_schedules), with the
// parameter names of ds_config.json's "scheduler.params" minus the warmup_
// prefix where it only repeats the schedule's name. `step` is the
// scheduler's last_batch_iteration (0 for the first step).

def Train_WarmupLRAttr : Train_Attr<"WarmupLR", "warmup_lr"> {
  let summary = "WarmupLR: rise from min_lr to max_lr, then hold";
  let description = [{
    With `n = max(2, warmup_num_steps)`: for `step < n` the rate is
    `min_lr + (max_lr - min_lr) * g` where `g = log(step + 1) / log(n)`
    (`log`) or `step / n` (`linear`); from step `n` on it is `max_lr`.

      #dstrain.warmup_lr<min_lr = 0.0, max_lr = 1.0e-3, warmup_num_steps = 1000, warmup_type = linear>
  }];
  let parameters = (ins
    Train_F64Parameter<"learning rate at step 0", "0.0">:$min_lr,
    Train_F64Parameter<"learning rate after warmup", "0.001">:$max_lr,
    Train_I64Parameter<"warmup length", "1000">:$warmup_num_steps,
    Train_WarmupTypeParameter:$warmup_type);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Train_WarmupDecayLRAttr : Train_Attr<"WarmupDecayLR", "warmup_decay_lr"> {
  let summary = "WarmupDecayLR: WarmupLR, then linear decay to 0 at total_num_steps";
  let description = [{
    Warmup as `#dstrain.warmup_lr`; from step `n` on the rate is
    `min_lr + (max_lr - min_lr) * max(0, (total_num_steps - step) /
    max(1, total_num_steps - n))`.

      #dstrain.warmup_decay_lr<total_num_steps = 10000, max_lr = 1.0e-3, warmup_num_steps = 100>
  }];
  let parameters = (ins
    AttrParameter<"int64_t", "last step of the decay">:$total_num_steps,
    Train_F64Parameter<"learning rate at step 0", "0.0">:$min_lr,
    Train_F64Parameter<"learning rate after warmup", "0.001">:$max_lr,
    Train_I64Parameter<"warmup length", "1000">:$warmup_num_steps,
    Train_WarmupTypeParameter:$warmup_type);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Train_WarmupCosineLRAttr : Train_Attr<"WarmupCosineLR", "warmup_cosine_lr"> {
  let summary = "WarmupCosineLR: warmup of a ratio of base_lr, then cosine decay";
  let description = [{
    The rate is `base_lr` (the optimizer's `lr`) times a ratio. With
    `n = max(2, warmup_num_steps)`, for `step < n` the ratio rises from
    `warmup_min_ratio` to 1 (`warmup_min_ratio + (1 - warmup_min_ratio) * g`,
    `g` as in `#dstrain.warmup_lr`); afterwards it is
    `max(0, cos_min_ratio + (1 - cos_min_ratio) * (1 + cos(π k / K)) / 2)`
    with `k = step - n + 1` and `K = total_num_steps - n`.

      #dstrain.warmup_cosine_lr<total_num_steps = 10000, base_lr = 3.0e-4, warmup_num_steps = 100>
  }];
  let parameters = (ins
    AttrParameter<"int64_t", "end of the cosine">:$total_num_steps,
    Train_F64Parameter<"the optimizer's learning rate", "0.001">:$base_lr,
    Train_F64Parameter<"ratio at step 0", "0.0">:$warmup_min_ratio,
    Train_I64Parameter<"warmup length", "1000">:$warmup_num_steps,
    Train_F64Parameter<"ratio at the end of the cosine", "0.0001">:$cos_min_ratio,
    Train_WarmupTypeParameter:$warmup_type);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Train_OneCycleAttr : Train_Attr<"OneCycle", "one_cycle"> {
  let summary = "OneCycle: up to cycle_max_lr and back, then decay";
  let description = [{
    The learning-rate part of DeepSpeed's `OneCycle` (momentum cycling is
    not modelled): the rate rises from `cycle_min_lr` to `cycle_max_lr` over
    `cycle_first_step_size` steps, falls back over `cycle_second_step_size`
    (default: the first), then decays by `decay_lr_rate` every
    `decay_step_size` steps. The stair counts are DeepSpeed's parameters,
    carried as given.

      #dstrain.one_cycle<cycle_min_lr = 1.0e-4, cycle_max_lr = 1.0e-3, cycle_first_step_size = 1000>
  }];
  let parameters = (ins
    Train_F64Param<"lowest rate of the cycle">:$cycle_min_lr,
    Train_F64Param<"highest rate of the cycle">:$cycle_max_lr,
    Train_F64Parameter<"post-cycle decay rate", "0.0">:$decay_lr_rate,
    Train_I64Parameter<"steps of the rising half", "2000">:$cycle_first_step_size,
    OptionalParameter<"std::optional<int64_t>",
                      "steps of the falling half">:$cycle_second_step_size,
    Train_I64Parameter<"stairs of the rising half", "0">:$cycle_first_stair_count,
    OptionalParameter<"std::optional<int64_t>",
                      "stairs of the falling half">:$cycle_second_stair_count,
    Train_I64Parameter<"steps between decays", "0">:$decay_step_size);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Train_LRScheduleAttr : AnyAttrOf<[Train_WarmupLRAttr,
    Train_WarmupDecayLRAttr, Train_WarmupCosineLRAttr, Train_OneCycleAttr]>;

#endif // DSTRAIN_ATTRS
