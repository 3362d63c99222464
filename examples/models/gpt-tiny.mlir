// A 2-layer GPT-2 style model in the model contract (what `ds-import --spec`
// produces): C=16, 2 heads, T=8, vocab 64, micro-batch 2; parameters
// in nn.Linear layout [out, in], LM head tied to wte.weight.
module {
  func.func @forward(
    %wte_weight: tensor<64x16xf32> {dsnn.param = #dsnn.param<name = "wte.weight", init = normal, std = 0.02, tied = "wte">},
    %wpe_weight: tensor<8x16xf32> {dsnn.param = #dsnn.param<name = "wpe.weight", init = normal, std = 0.02>},
    %h_0_ln_1_weight: tensor<16xf32> {dsnn.param = #dsnn.param<name = "h.0.ln_1.weight", init = ones>},
    %h_0_ln_1_bias: tensor<16xf32> {dsnn.param = #dsnn.param<name = "h.0.ln_1.bias", init = zeros>},
    %h_0_attn_c_attn_weight: tensor<48x16xf32> {dsnn.param = #dsnn.param<name = "h.0.attn.c_attn.weight", init = normal, std = 0.02>},
    %h_0_attn_c_attn_bias: tensor<48xf32> {dsnn.param = #dsnn.param<name = "h.0.attn.c_attn.bias", init = zeros>},
    %h_0_attn_c_proj_weight: tensor<16x16xf32> {dsnn.param = #dsnn.param<name = "h.0.attn.c_proj.weight", init = normal, std = 0.02>},
    %h_0_attn_c_proj_bias: tensor<16xf32> {dsnn.param = #dsnn.param<name = "h.0.attn.c_proj.bias", init = zeros>},
    %h_0_ln_2_weight: tensor<16xf32> {dsnn.param = #dsnn.param<name = "h.0.ln_2.weight", init = ones>},
    %h_0_ln_2_bias: tensor<16xf32> {dsnn.param = #dsnn.param<name = "h.0.ln_2.bias", init = zeros>},
    %h_0_mlp_c_fc_weight: tensor<64x16xf32> {dsnn.param = #dsnn.param<name = "h.0.mlp.c_fc.weight", init = normal, std = 0.02>},
    %h_0_mlp_c_fc_bias: tensor<64xf32> {dsnn.param = #dsnn.param<name = "h.0.mlp.c_fc.bias", init = zeros>},
    %h_0_mlp_c_proj_weight: tensor<16x64xf32> {dsnn.param = #dsnn.param<name = "h.0.mlp.c_proj.weight", init = normal, std = 0.02>},
    %h_0_mlp_c_proj_bias: tensor<16xf32> {dsnn.param = #dsnn.param<name = "h.0.mlp.c_proj.bias", init = zeros>},
    %h_1_ln_1_weight: tensor<16xf32> {dsnn.param = #dsnn.param<name = "h.1.ln_1.weight", init = ones>},
    %h_1_ln_1_bias: tensor<16xf32> {dsnn.param = #dsnn.param<name = "h.1.ln_1.bias", init = zeros>},
    %h_1_attn_c_attn_weight: tensor<48x16xf32> {dsnn.param = #dsnn.param<name = "h.1.attn.c_attn.weight", init = normal, std = 0.02>},
    %h_1_attn_c_attn_bias: tensor<48xf32> {dsnn.param = #dsnn.param<name = "h.1.attn.c_attn.bias", init = zeros>},
    %h_1_attn_c_proj_weight: tensor<16x16xf32> {dsnn.param = #dsnn.param<name = "h.1.attn.c_proj.weight", init = normal, std = 0.02>},
    %h_1_attn_c_proj_bias: tensor<16xf32> {dsnn.param = #dsnn.param<name = "h.1.attn.c_proj.bias", init = zeros>},
    %h_1_ln_2_weight: tensor<16xf32> {dsnn.param = #dsnn.param<name = "h.1.ln_2.weight", init = ones>},
    %h_1_ln_2_bias: tensor<16xf32> {dsnn.param = #dsnn.param<name = "h.1.ln_2.bias", init = zeros>},
    %h_1_mlp_c_fc_weight: tensor<64x16xf32> {dsnn.param = #dsnn.param<name = "h.1.mlp.c_fc.weight", init = normal, std = 0.02>},
    %h_1_mlp_c_fc_bias: tensor<64xf32> {dsnn.param = #dsnn.param<name = "h.1.mlp.c_fc.bias", init = zeros>},
    %h_1_mlp_c_proj_weight: tensor<16x64xf32> {dsnn.param = #dsnn.param<name = "h.1.mlp.c_proj.weight", init = normal, std = 0.02>},
    %h_1_mlp_c_proj_bias: tensor<16xf32> {dsnn.param = #dsnn.param<name = "h.1.mlp.c_proj.bias", init = zeros>},
    %ln_f_weight: tensor<16xf32> {dsnn.param = #dsnn.param<name = "ln_f.weight", init = ones>},
    %ln_f_bias: tensor<16xf32> {dsnn.param = #dsnn.param<name = "ln_f.bias", init = zeros>},
    %ids: tensor<2x8xi64>, %pos: tensor<8xi64>, %targets: tensor<2x8xi64>) -> tensor<f32> {
    %tok = dsnn.embedding %ids, %wte_weight : tensor<2x8xi64>, tensor<64x16xf32> -> tensor<2x8x16xf32>
    %posemb = dsnn.embedding %pos, %wpe_weight : tensor<8xi64>, tensor<8x16xf32> -> tensor<8x16xf32>
    %h0 = dsnn.add %tok, %posemb : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x16xf32>
    %h1 = dsnn.layer "h.0" ("GPT2Block") -> tensor<2x8x16xf32> {
      %ln1 = dsnn.layer_norm %h0, %h_0_ln_1_weight, %h_0_ln_1_bias eps 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
      %qkv = dsnn.linear %ln1, %h_0_attn_c_attn_weight, %h_0_attn_c_attn_bias : (tensor<2x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<2x8x48xf32>
      %q, %k, %v = dsnn.split %qkv dim 2 : tensor<2x8x48xf32> -> tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
      %q4 = dsnn.reshape %q : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
      %qh = dsnn.transpose %q4 perm [0, 2, 1, 3] : tensor<2x8x2x8xf32> -> tensor<2x2x8x8xf32>
      %k4 = dsnn.reshape %k : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
      %kh = dsnn.transpose %k4 perm [0, 2, 1, 3] : tensor<2x8x2x8xf32> -> tensor<2x2x8x8xf32>
      %v4 = dsnn.reshape %v : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
      %vh = dsnn.transpose %v4 perm [0, 2, 1, 3] : tensor<2x8x2x8xf32> -> tensor<2x2x8x8xf32>
      %att = dsnn.attention %qh, %kh, %vh {causal} : tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32> -> tensor<2x2x8x8xf32>
      %attT = dsnn.transpose %att perm [0, 2, 1, 3] : tensor<2x2x8x8xf32> -> tensor<2x8x2x8xf32>
      %attC = dsnn.reshape %attT : tensor<2x8x2x8xf32> -> tensor<2x8x16xf32>
      %proj = dsnn.linear %attC, %h_0_attn_c_proj_weight, %h_0_attn_c_proj_bias : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
      %res1 = dsnn.add %h0, %proj : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
      %ln2 = dsnn.layer_norm %res1, %h_0_ln_2_weight, %h_0_ln_2_bias eps 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
      %fc = dsnn.linear %ln2, %h_0_mlp_c_fc_weight, %h_0_mlp_c_fc_bias : (tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
      %act = dsnn.gelu %fc : tensor<2x8x64xf32>
      %mlp = dsnn.linear %act, %h_0_mlp_c_proj_weight, %h_0_mlp_c_proj_bias : (tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
      %res2 = dsnn.add %res1, %mlp : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
      dsnn.yield %res2 : tensor<2x8x16xf32>
    }
    %h2 = dsnn.layer "h.1" ("GPT2Block") -> tensor<2x8x16xf32> {
      %ln1 = dsnn.layer_norm %h1, %h_1_ln_1_weight, %h_1_ln_1_bias eps 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
      %qkv = dsnn.linear %ln1, %h_1_attn_c_attn_weight, %h_1_attn_c_attn_bias : (tensor<2x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<2x8x48xf32>
      %q, %k, %v = dsnn.split %qkv dim 2 : tensor<2x8x48xf32> -> tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
      %q4 = dsnn.reshape %q : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
      %qh = dsnn.transpose %q4 perm [0, 2, 1, 3] : tensor<2x8x2x8xf32> -> tensor<2x2x8x8xf32>
      %k4 = dsnn.reshape %k : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
      %kh = dsnn.transpose %k4 perm [0, 2, 1, 3] : tensor<2x8x2x8xf32> -> tensor<2x2x8x8xf32>
      %v4 = dsnn.reshape %v : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
      %vh = dsnn.transpose %v4 perm [0, 2, 1, 3] : tensor<2x8x2x8xf32> -> tensor<2x2x8x8xf32>
      %att = dsnn.attention %qh, %kh, %vh {causal} : tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32> -> tensor<2x2x8x8xf32>
      %attT = dsnn.transpose %att perm [0, 2, 1, 3] : tensor<2x2x8x8xf32> -> tensor<2x8x2x8xf32>
      %attC = dsnn.reshape %attT : tensor<2x8x2x8xf32> -> tensor<2x8x16xf32>
      %proj = dsnn.linear %attC, %h_1_attn_c_proj_weight, %h_1_attn_c_proj_bias : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
      %res1 = dsnn.add %h1, %proj : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
      %ln2 = dsnn.layer_norm %res1, %h_1_ln_2_weight, %h_1_ln_2_bias eps 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
      %fc = dsnn.linear %ln2, %h_1_mlp_c_fc_weight, %h_1_mlp_c_fc_bias : (tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
      %act = dsnn.gelu %fc : tensor<2x8x64xf32>
      %mlp = dsnn.linear %act, %h_1_mlp_c_proj_weight, %h_1_mlp_c_proj_bias : (tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
      %res2 = dsnn.add %res1, %mlp : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
      dsnn.yield %res2 : tensor<2x8x16xf32>
    }
    %lnf = dsnn.layer_norm %h2, %ln_f_weight, %ln_f_bias eps 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %logits = dsnn.linear %lnf, %wte_weight : (tensor<2x8x16xf32>, tensor<64x16xf32>) -> tensor<2x8x64xf32>
    %loss = dsnn.cross_entropy %logits, %targets : tensor<2x8x64xf32>, tensor<2x8xi64> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
