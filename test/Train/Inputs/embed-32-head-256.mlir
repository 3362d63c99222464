// Token ids index a 32-row table, but the head scores 256 classes: the ids
// must be below 32, whatever the loss's classes.
func.func @forward(%emb: tensor<32x8xf32> {dsnn.param = #dsnn.param<name = "embed.weight", init = normal, std = 2.000000e-02>},
                   %head: tensor<256x8xf32> {dsnn.param = #dsnn.param<name = "head.weight", init = normal, std = 2.000000e-02>},
                   %ids: tensor<4x16xi64> {dsnn.batch = "input_ids"},
                   %targets: tensor<4x16xi64> {dsnn.batch = "targets"}) -> tensor<f32> {
  %h = dsnn.embedding %ids, %emb : tensor<4x16xi64>, tensor<32x8xf32> -> tensor<4x16x8xf32>
  %logits = dsnn.linear %h, %head : (tensor<4x16x8xf32>, tensor<256x8xf32>) -> tensor<4x16x256xf32>
  %loss = dsnn.cross_entropy %logits, %targets : tensor<4x16x256xf32>, tensor<4x16xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
